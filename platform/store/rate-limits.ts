import { sql } from 'kysely';
import type { Db } from './database';

/** The budgets kept in `rate_limit_hits`, each counting requests of one kind per key. */
export type RateLimitBucket = 'registration:address' | 'user-code:address' | 'user-code:session';

/**
 * Records a request of `key` against `bucket` and says how many it made in the window, this one included: one
 * statement (the count reads the snapshot from before the insert, so it adds one), so parallel requests to any API
 * process each see a distinct count and no more than the budget get through.
 */
export async function countHit(db: Db, bucket: RateLimitBucket, key: string, windowSeconds: number): Promise<number> {
  const { rows } = await sql<{ n: string }>`
    with recorded as (
      insert into rate_limit_hits (bucket, key, expires_at)
      values (${bucket}, ${key}, now() + make_interval(secs => ${windowSeconds})))
    select count(*) + 1 as n from rate_limit_hits
    where bucket = ${bucket} and key = ${key} and at > now() - make_interval(secs => ${windowSeconds})`.execute(db);
  return Number(rows[0].n);
}

/** Drops the hits whose window has passed; how many went. */
export async function purgeExpiredHits(db: Db): Promise<number> {
  const result = await db
    .deleteFrom('rate_limit_hits')
    .where('expires_at', '<', sql<Date>`now()`)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
