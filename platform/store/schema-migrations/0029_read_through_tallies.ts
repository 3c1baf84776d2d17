import { sql, type Kysely } from 'kysely';

/**
 * `read_through_tallies`: the read-through window's look-ups by kind and outcome, counted in the store so that the
 * cutover dashboard shows every instance's (read_through_total is per process and starts at 0 with each).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('read_through_tallies')
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('outcome', 'text', (c) => c.notNull())
    .addColumn('count', 'bigint', (c) => c.notNull().defaultTo(0))
    .addColumn('first_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('last_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('read_through_tallies_pkey', ['kind', 'outcome'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('read_through_tallies').execute();
}
