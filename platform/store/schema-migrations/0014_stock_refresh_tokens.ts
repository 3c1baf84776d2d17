import { sql, type Kysely } from 'kysely';

/**
 * Refresh tokens a stock IdentityServer issued: `grants.key` holds the source's hash of the handle (`key_hashed`), so
 * a token is found by hashing what the client presents, never by the stored value itself; `data_sealed` says `data`
 * is sealed under the service's data-protection ring (it was opened with the source's at migration).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('grants')
    .addColumn('key_hashed', 'boolean', (c) => c.notNull().defaultTo(sql`false`))
    .addColumn('data_sealed', 'boolean', (c) => c.notNull().defaultTo(sql`false`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('grants').dropColumn('key_hashed').dropColumn('data_sealed').execute();
}
