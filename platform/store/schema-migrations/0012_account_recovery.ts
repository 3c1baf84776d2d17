import { sql, type Kysely } from 'kysely';

/**
 * Account recovery and its trail:
 * - `account_tokens`: the single-use links the service mails (password reset, e-mail confirmation), stored as a
 *   SHA-256 digest of the token only. `password_stamp` is a digest of the password hash the token was made for: a
 *   password changed another way makes the token dead (ASP.NET Identity ties its tokens to the security stamp).
 * - `audit_events`: what happened to an account and who did it, without any secret; purged after Audit:RetentionDays.
 * - `users.sessions_revoked_at`: "sign out everywhere" also stops the service's own admin tokens issued before it.
 * - an index on the account of the provider's artefacts, to end a user's sessions, grants and tokens at once.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('account_tokens')
    .addColumn('token_hash', 'text', (c) => c.primaryKey())
    .addColumn('purpose', 'text', (c) => c.notNull().check(sql`purpose in ('password-reset', 'email-confirmation')`))
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('password_stamp', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .addColumn('used_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('account_tokens_user').on('account_tokens').columns(['user_id', 'purpose']).execute();

  await db.schema
    .createTable('audit_events')
    .addColumn('id', 'bigserial', (c) => c.primaryKey())
    .addColumn('at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('type', 'text', (c) => c.notNull())
    .addColumn('user_id', 'text')
    .addColumn('client_id', 'text')
    .addColumn('client_address', 'text')
    .addColumn('actor', 'text')
    .addColumn('detail', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .execute();
  await db.schema.createIndex('audit_events_user').on('audit_events').columns(['user_id', 'id']).execute();
  await db.schema.createIndex('audit_events_at').on('audit_events').column('at').execute();

  await db.schema.alterTable('users').addColumn('sessions_revoked_at', 'timestamptz').execute();
  await sql`create index oidc_payloads_account on oidc_payloads ((payload->>'accountId')) where payload ? 'accountId'`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop index if exists oidc_payloads_account`.execute(db);
  await db.schema.alterTable('users').dropColumn('sessions_revoked_at').execute();
  await db.schema.dropTable('audit_events').execute();
  await db.schema.dropTable('account_tokens').execute();
}
