import type { Kysely } from 'kysely';

/**
 * App keys are kept sealed under the data-protection key ring. Rows stored before have plaintext keys; the flag tells
 * them apart (a key could look like a sealed value), and the service seals them at start (protectStoredAppKeys).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('provisioning_apps')
    .addColumn('api_key_protected', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('provisioning_apps').dropColumn('api_key_protected').execute();
}
