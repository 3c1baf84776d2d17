import { sql, type Kysely } from 'kysely';

/**
 * `user_removals.sign_outs`: the clients a removal signed the user out of (each with the session id it knew), kept
 * with the rest of the removal's answer so the step run again after a lost worker still tells them (back-channel
 * logout).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('user_removals')
    .addColumn('sign_outs', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('user_removals').dropColumn('sign_outs').execute();
}
