import { sql } from 'kysely';
import type { Db } from '../../platform/store/database';
import { logger } from '../../platform/observability/logger';

/**
 * Counts one read-through look-up by kind and outcome, every instance's in the same row (what the cutover dashboard
 * shows). A store that cannot take the count loses it, never the look-up: read_through_total and the log still have it.
 */
export async function tallyReadThrough(db: Db, kind: string, outcome: string): Promise<void> {
  try {
    await db
      .insertInto('read_through_tallies')
      .values({ kind, outcome, count: 1 })
      .onConflict((oc) =>
        oc.columns(['kind', 'outcome']).doUpdateSet({
          count: sql`read_through_tallies.count + 1` as never,
          last_at: sql`now()` as never,
        }),
      )
      .execute();
  } catch (error) {
    logger.warn(
      `read-through: the look-up (${kind}, ${outcome}) was not counted in the store: ${(error as Error).message}`,
    );
  }
}

export interface ReadThroughTally {
  kind: string;
  outcome: string;
  count: number;
  firstAt: Date;
  lastAt: Date;
}

/** Every kind and outcome counted so far, by kind, most frequent first. */
export async function listReadThroughTallies(db: Db): Promise<ReadThroughTally[]> {
  const rows = await db
    .selectFrom('read_through_tallies')
    .selectAll()
    .orderBy('kind')
    .orderBy('count', 'desc')
    .orderBy('outcome')
    .execute();
  return rows.map((r) => ({
    kind: r.kind,
    outcome: r.outcome,
    count: Number(r.count),
    firstAt: r.first_at,
    lastAt: r.last_at,
  }));
}
