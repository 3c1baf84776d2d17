import { sql, type Kysely } from 'kysely';

/**
 * What the cutover's read-through window (Migration:ReadThrough) must remember across instances:
 * - `source_user_tombstones`: every user deleted or deactivated here, by id (the source's id for a migrated user), so
 *   neither the window nor a later sweep brings it back from the source;
 * - `read_through_budget`: source look-ups counted per window of time, one row a window, so the budget holds for all
 *   instances together (keyed by the window's length too, so two settings side by side do not share a count).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('source_user_tombstones')
    .addColumn('user_id', 'text', (c) => c.primaryKey())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createTable('read_through_budget')
    .addColumn('window_seconds', 'integer', (c) => c.notNull())
    .addColumn('slot', 'bigint', (c) => c.notNull())
    .addColumn('used', 'integer', (c) => c.notNull())
    .addPrimaryKeyConstraint('read_through_budget_pkey', ['window_seconds', 'slot'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('read_through_budget').execute();
  await db.schema.dropTable('source_user_tombstones').execute();
}
