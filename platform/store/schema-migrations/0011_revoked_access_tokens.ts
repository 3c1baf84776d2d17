import { type Kysely } from 'kysely';

/**
 * `revoked_access_tokens`: the ids (`jti`) of JWT access tokens revoked at `/connect/revocation`. A JWT is not stored
 * when issued, so its revocation is kept here until the token would have expired anyway; the admin API refuses a
 * token listed here.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('revoked_access_tokens')
    .addColumn('jti', 'text', (c) => c.primaryKey())
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('revoked_access_tokens').execute();
}
