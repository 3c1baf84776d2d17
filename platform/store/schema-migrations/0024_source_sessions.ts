import type { Kysely } from 'kysely';

/**
 * Source sessions carried over (Migration:SourceSessions):
 * - `users.security_stamp`: ASP.NET Identity's SecurityStamp, carried from `AspNetUsers` and changed here whenever the
 *   user's sessions end (a password change or reset, a change of the second factor, "sign out everywhere", an admin's
 *   end of sessions), so a source cookie issued under the old stamp no longer signs anybody in.
 * - `source_key_ring`: the source's Data Protection key ring as the last migration read it, each XML document sealed
 *   with the service's ring, so the source's cookies open here without a connection to the source.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('users').addColumn('security_stamp', 'text').execute();
  await db.schema
    .createTable('source_key_ring')
    .addColumn('name', 'text', (c) => c.primaryKey())
    .addColumn('sealed_xml', 'text', (c) => c.notNull())
    .addColumn('copied_at', 'timestamptz', (c) => c.notNull())
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('source_key_ring').execute();
  await db.schema.alterTable('users').dropColumn('security_stamp').execute();
}
