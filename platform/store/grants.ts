import { sql } from 'kysely';
import { z } from 'zod';
import type { Db } from './database';
import { unexpired } from './expiry';

/**
 * The service's refresh-token data shape: what `grants.data` holds for a migrated refresh token (written by the
 * migration from a stock source's protected data, or by a source fork that keeps handles verbatim). The subject,
 * client, creation and expiry come from the row itself.
 */
export const migratedRefreshTokenData = z.object({
  /** Every scope the token was granted, space-separated, offline_access included. */
  scope: z.string().min(1),
  /** The API resource (its name) the access tokens it buys are for; by default the one of its scopes. */
  resource: z.string().optional(),
  /** When the user signed in, in seconds since the epoch. */
  authTime: z.number().int().optional(),
  amr: z.array(z.string()).optional(),
});

export type MigratedRefreshTokenData = z.infer<typeof migratedRefreshTokenData>;

/**
 * A live refresh token the migration copied, found by the handle a client presents: verbatim (a source fork's), or
 * by the source's hashes of it (`hashedKeys`, a stock IdentityServer's); a stored hash presented as a handle matches
 * nothing. Marked consumed as it is taken, so that it is adopted once however many requests present it at the same
 * moment; undefined when there is none (unknown, expired, already taken, or without a subject).
 */
export function takeMigratedRefreshToken(db: Db, handle: string, hashedKeys: string[]) {
  return db
    .updateTable('grants')
    .set({ consumed_time: sql<Date>`now()` })
    .where((eb) =>
      eb.or([
        eb.and([eb('key', '=', handle), eb('key_hashed', '=', false)]),
        eb.and([eb('key', 'in', hashedKeys), eb('key_hashed', '=', true)]),
      ]),
    )
    .where('type', '=', 'refresh_token')
    .where('consumed_time', 'is', null)
    .where('subject_id', 'is not', null)
    .where(unexpired('expiration'))
    .returningAll()
    .executeTakeFirst();
}
