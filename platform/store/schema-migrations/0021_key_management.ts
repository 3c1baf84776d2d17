import { sql, type Kysely } from 'kysely';

/**
 * Signing keys as IdentityServer's key management keeps them: `created_at` is the key's own creation time (a migrated
 * key keeps the source's), `stored_at` when it arrived here (a key no instance has seen yet may not sign), `origin`
 * whether rotation made it, a migration carried it over, or an operator imported it as a static key.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('signing_keys')
    .addColumn('origin', 'text', (c) => c.notNull().defaultTo('generated'))
    .addColumn('stored_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await sql`update signing_keys set stored_at = created_at`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('signing_keys').dropColumn('origin').dropColumn('stored_at').execute();
}
