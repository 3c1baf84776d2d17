import { sql } from 'kysely';
import type { Db } from './database';

/**
 * A live refresh token the migration copied with its handle verbatim, marked consumed as it is taken, so that it is
 * adopted once however many requests present it at the same moment; undefined when there is none (unknown, expired,
 * already taken, or without a subject).
 */
export function takeMigratedRefreshToken(db: Db, handle: string) {
  return db
    .updateTable('grants')
    .set({ consumed_time: sql<Date>`now()` })
    .where('key', '=', handle)
    .where('type', '=', 'refresh_token')
    .where('consumed_time', 'is', null)
    .where('subject_id', 'is not', null)
    .where((eb) => eb.or([eb('expiration', 'is', null), eb('expiration', '>', sql<Date>`now()`)]))
    .returningAll()
    .executeTakeFirst();
}
