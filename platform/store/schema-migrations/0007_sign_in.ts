import { sql, type Kysely } from 'kysely';

/**
 * Sign-in: `oidc_payloads` holds every artefact of the OpenID Connect provider (sessions, interactions, codes, tokens,
 * grants, replay records) so API processes behind one URL share them and a restart signs nobody out. Users gain the
 * ASP.NET Identity sign-in state (two-factor switch, confirmed e-mail, lockout). Signing keys are sealed at rest like
 * app keys; rows stored before are sealed at the next start.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('oidc_payloads')
    .addColumn('model', 'text', (c) => c.notNull())
    .addColumn('id', 'text', (c) => c.notNull())
    .addColumn('payload', 'jsonb', (c) => c.notNull())
    .addColumn('grant_id', 'text')
    .addColumn('user_code', 'text')
    .addColumn('uid', 'text')
    .addColumn('expires_at', 'timestamptz')
    .addColumn('consumed_at', 'timestamptz')
    .addPrimaryKeyConstraint('oidc_payloads_pkey', ['model', 'id'])
    .execute();
  await db.schema.createIndex('oidc_payloads_grant_id_idx').on('oidc_payloads').column('grant_id').execute();
  await db.schema.createIndex('oidc_payloads_uid_idx').on('oidc_payloads').columns(['model', 'uid']).execute();
  await db.schema.createIndex('oidc_payloads_expires_at_idx').on('oidc_payloads').column('expires_at').execute();

  await db.schema
    .alterTable('users')
    .addColumn('two_factor_enabled', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('email_confirmed', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('access_failed_count', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('lockout_end', 'timestamptz')
    .execute();

  // The time step of the last TOTP code accepted: each code is accepted once.
  await db.schema.alterTable('mfa_credentials').addColumn('last_used_step', 'bigint').execute();

  // Once sealed, `jwk` keeps the public half and `sealed_private` the private key under the data-protection ring.
  await db.schema.alterTable('signing_keys').addColumn('sealed_private', 'text').execute();

  // Sign-in failures per client address, for the rate limit that spans API processes.
  await db.schema
    .createTable('sign_in_attempts')
    .addColumn('address', 'text', (c) => c.notNull())
    .addColumn('at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createIndex('sign_in_attempts_address_at_idx')
    .on('sign_in_attempts')
    .columns(['address', 'at'])
    .execute();
  // The admin API's own scope: an access token for it carries the user's roles, which the IdentityAdmin policy reads.
  await sql`insert into scopes (name, kind, display_name, required, user_claims, origin)
    values ('IdentityAdmin', 'api', 'Administer the identity service', false, '["role"]', 'seed')
    on conflict (name) do nothing`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`delete from scopes where name = 'IdentityAdmin' and origin = 'seed'`.execute(db);
  await db.schema.dropTable('sign_in_attempts').execute();
  await db.schema.alterTable('signing_keys').dropColumn('sealed_private').execute();
  await db.schema.alterTable('mfa_credentials').dropColumn('last_used_step').execute();
  await db.schema
    .alterTable('users')
    .dropColumn('lockout_end')
    .dropColumn('access_failed_count')
    .dropColumn('email_confirmed')
    .dropColumn('two_factor_enabled')
    .execute();
  await db.schema.dropTable('oidc_payloads').execute();
}
