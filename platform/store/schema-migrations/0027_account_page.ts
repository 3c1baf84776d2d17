import { sql, type Kysely } from 'kysely';

/**
 * What the account page shows and changes:
 * - `session_devices`: where each sign-in of a user came from (the client address and the browser's User-Agent, cut
 *   short), by the provider's session id; gone with the user, and purged once its session has ended.
 * - `account_tokens` take a third purpose, `email-change`, whose link confirms `new_email` (the address it was mailed
 *   to) as the user's address.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('session_devices')
    .addColumn('session_id', 'text', (c) => c.primaryKey())
    .addColumn('user_id', 'text', (c) => c.notNull().references('users.id').onDelete('cascade'))
    .addColumn('client_address', 'text')
    .addColumn('user_agent', 'text')
    .addColumn('signed_in_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('session_devices_user').on('session_devices').column('user_id').execute();
  await sql`alter table account_tokens drop constraint if exists account_tokens_purpose_check`.execute(db);
  await sql`alter table account_tokens add constraint account_tokens_purpose_check
    check (purpose in ('password-reset', 'email-confirmation', 'email-change'))`.execute(db);
  await db.schema.alterTable('account_tokens').addColumn('new_email', 'text').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('account_tokens').dropColumn('new_email').execute();
  await sql`delete from account_tokens where purpose = 'email-change'`.execute(db);
  await sql`alter table account_tokens drop constraint if exists account_tokens_purpose_check`.execute(db);
  await sql`alter table account_tokens add constraint account_tokens_purpose_check
    check (purpose in ('password-reset', 'email-confirmation'))`.execute(db);
  await db.schema.dropTable('session_devices').execute();
}
