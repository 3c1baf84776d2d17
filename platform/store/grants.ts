import { sql, type ExpressionBuilder } from 'kysely';
import { signedOutSince, tombstoned } from './read-through-guards';
import type { Database } from './schema';
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
 * moment; undefined when there is none (unknown, expired, already taken, or without a subject), when its user was
 * deleted or deactivated here (a tombstone), or when the user's sessions were ended after the source issued it.
 */
export function takeMigratedRefreshToken(db: Db, handle: string, hashedKeys: string[]) {
  return db
    .updateTable('grants')
    .set({ consumed_time: sql<Date>`now()` })
    .where(migratedRefreshTokenOf(handle, hashedKeys))
    .where('consumed_time', 'is', null)
    .where(unexpired('expiration'))
    .where((eb) => eb.not(tombstoned(sql.ref('grants.subject_id'))))
    .where((eb) => eb.not(signedOutSince(sql.ref('grants.subject_id'), sql.ref('grants.creation_time'))))
    .returningAll()
    .executeTakeFirst();
}

/**
 * Whether a migrated refresh token, just adopted, still stands: its row is there (no "Remove access" deleted it) and
 * its user has not been signed out since it was issued. Whatever ends a user's access takes the user's row first
 * (endSignInsIn, withdrawAccessOf in oidc-payloads.ts); waiting for a share of that row lets an end under way finish,
 * and the check after it sees what it did. An end that starts later finds the adopted token and deletes it.
 */
export async function adoptedTokenStands(db: Db, key: string, userId: string): Promise<boolean> {
  await db.selectFrom('users').select('id').where('id', '=', userId).forShare().execute();
  const row = await db
    .selectFrom('grants')
    .select('key')
    .where('key', '=', key)
    .where('subject_id', '=', userId)
    .where((eb) => eb.not(tombstoned(sql.ref('grants.subject_id'))))
    .where((eb) => eb.not(signedOutSince(sql.ref('grants.subject_id'), sql.ref('grants.creation_time'))))
    .executeTakeFirst();
  return row !== undefined;
}

/** The migrated refresh token a client's handle names, verbatim (a fork's) or by the source's hashes (a stock one). */
const migratedRefreshTokenOf = (handle: string, hashedKeys: string[]) => (eb: ExpressionBuilder<Database, 'grants'>) =>
  eb.and([
    eb.or([
      eb.and([eb('key', '=', handle), eb('key_hashed', '=', false)]),
      eb.and([eb('key', 'in', hashedKeys), eb('key_hashed', '=', true)]),
    ]),
    eb('type', '=', 'refresh_token'),
    eb('subject_id', 'is not', null),
  ]);

/**
 * The key of the live migrated refresh token a client's handle names, without taking it: the read-through window
 * asks the source whether that token is still live there before it is adopted.
 */
export async function findMigratedRefreshTokenKey(
  db: Db,
  handle: string,
  hashedKeys: string[],
): Promise<string | undefined> {
  const row = await db
    .selectFrom('grants')
    .select('key')
    .where(migratedRefreshTokenOf(handle, hashedKeys))
    .where('consumed_time', 'is', null)
    .where(unexpired('expiration'))
    .executeTakeFirst();
  return row?.key;
}

/** Marks a migrated refresh token consumed without adopting it: the source consumed or revoked it since the sweep. */
export async function retireMigratedRefreshToken(db: Db, key: string): Promise<void> {
  await db
    .updateTable('grants')
    .set({ consumed_time: sql<Date>`now()` })
    .where('key', '=', key)
    .where('type', '=', 'refresh_token')
    .execute();
}
