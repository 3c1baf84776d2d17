import { sql } from 'kysely';
import type { Db } from './database';

/** The budgets kept in `rate_limit_hits`, each counting requests of one kind per key. */
export type RateLimitBucket =
  | 'registration:address'
  | 'registration-notice:account'
  | 'user-code:address'
  | 'user-code:session'
  | 'password-reset:address';

/**
 * Records a request of `key` against `bucket` and says how many it made in the window, this one included. Parallel
 * requests of one key, to any API process, take turns on an advisory lock, so each counts the others' rows
 * (count_rate_limit_hit, schema migration 0031: one round trip).
 */
export async function countHit(db: Db, bucket: RateLimitBucket, key: string, windowSeconds: number): Promise<number> {
  const counted = sql<{ n: string }>`select count_rate_limit_hit(${bucket}, ${key}, ${windowSeconds}) as n`;
  return Number((await counted.execute(db)).rows[0].n);
}

/** Drops the hits whose window has passed; how many went. */
export async function purgeExpiredHits(db: Db): Promise<number> {
  const result = await db
    .deleteFrom('rate_limit_hits')
    .where('expires_at', '<', sql<Date>`now()`)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
