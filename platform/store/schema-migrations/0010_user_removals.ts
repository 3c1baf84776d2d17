import { sql, type Kysely } from 'kysely';

/**
 * `user_removals`: what a deletion or deactivation step found and which apps it took the user from, under the key of
 * the workflow run that made it, so that the step run again (the replay after a lost worker) answers the same.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('user_removals')
    .addColumn('removal_id', 'text', (c) => c.primaryKey())
    .addColumn('found', 'boolean', (c) => c.notNull())
    .addColumn('app_ids', 'jsonb', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('user_removals_created_at_idx').on('user_removals').column('created_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('user_removals').execute();
}
