import { sql } from 'kysely';
import type { Db } from '../../platform/store/database';

/**
 * Counts one source look-up against the read-through budget (`permitLimit` look-ups per `windowSeconds`, shared by
 * every instance through this table) and says whether it fits. One statement; older windows are dropped by it.
 */
export async function spendReadThroughBudget(db: Db, permitLimit: number, windowSeconds: number): Promise<boolean> {
  const { rows } = await sql<{ used: number }>`
    with slot as (select floor(extract(epoch from now()) / ${windowSeconds})::bigint as n),
    purged as (
      delete from read_through_budget where window_seconds = ${windowSeconds} and slot < (select n from slot)
    )
    insert into read_through_budget (window_seconds, slot, used) select ${windowSeconds}, n, 1 from slot
    on conflict (window_seconds, slot) do update set used = read_through_budget.used + 1
    returning used`.execute(db);
  return rows[0].used <= permitLimit;
}
