import { sql } from 'kysely';
import type { Db } from './database';

/** The tables whose rows are kept for a while after `created_at`, each module naming its own retention. */
type KeptForAWhile = 'pending_credentials' | 'idempotency_keys' | 'user_removals';

/** Deletes the rows created more than `hours` ago (by the store's clock, which set `created_at`); how many went. */
export async function deleteCreatedBefore(db: Db, table: KeptForAWhile, hours: number): Promise<number> {
  const result = await db
    .deleteFrom(table)
    .where('created_at', '<', sql<Date>`now() - make_interval(hours => ${hours})`)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
