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
 * requests of one key, to any API process, take turns on a transaction-scoped advisory lock, so each counts the
 * others' rows (one statement would count from a snapshot without them, and a burst would all see the same count).
 */
export function countHit(db: Db, bucket: RateLimitBucket, key: string, windowSeconds: number): Promise<number> {
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtextextended(${`${bucket}\n${key}`}, 0))`.execute(trx);
    await trx
      .insertInto('rate_limit_hits')
      .values({ bucket, key, expires_at: sql<Date>`now() + make_interval(secs => ${windowSeconds})` })
      .execute();
    const { n } = await trx
      .selectFrom('rate_limit_hits')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('bucket', '=', bucket)
      .where('key', '=', key)
      .where('at', '>', sql<Date>`now() - make_interval(secs => ${windowSeconds})`)
      .executeTakeFirstOrThrow();
    return Number(n);
  });
}

/** Drops the hits whose window has passed; how many went. */
export async function purgeExpiredHits(db: Db): Promise<number> {
  const result = await db
    .deleteFrom('rate_limit_hits')
    .where('expires_at', '<', sql<Date>`now()`)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
