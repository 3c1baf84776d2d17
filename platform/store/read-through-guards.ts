import { sql, type RawBuilder, type Transaction } from 'kysely';
import type { Db } from './database';
import type { Database } from './schema';

/**
 * Marks a user deleted or deactivated here, inside the removal's transaction: the source still holds the user (and
 * its hash, roles, logins and MFA), and neither the read-through window nor a later sweep may make it again.
 */
export async function tombstoneUserIn(
  trx: Transaction<Database>,
  userId: string,
  reason: 'deleted' | 'deactivated',
): Promise<void> {
  await trx
    .insertInto('source_user_tombstones')
    .values({ user_id: userId, reason })
    .onConflict((oc) => oc.column('user_id').doNothing())
    .execute();
}

/** Whether the user with this id was deleted or deactivated here, as a condition of a query. */
export function tombstoned(userId: RawBuilder<unknown>): RawBuilder<boolean> {
  return sql<boolean>`exists (select from source_user_tombstones t where t.user_id = ${userId})`;
}

/**
 * The per-user cut-off, as a condition: whatever ends a user's sessions (endSignInsIn: "sign out everywhere", a
 * password reset, an admin's end of sessions, a deletion or deactivation) sets `users.sessions_revoked_at`, and a
 * token issued before it (at the source, by its `CreationTime`) is not carried over or adopted.
 */
export function signedOutSince(userId: RawBuilder<unknown>, issuedAt: RawBuilder<unknown>): RawBuilder<boolean> {
  return sql<boolean>`exists (select from users u where u.id = ${userId} and u.sessions_revoked_at >= ${issuedAt})`;
}

/** Which of these ids were deleted or deactivated here. */
export async function tombstonedUserIds(db: Db, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  // One array parameter, not one per id: a migration page asks about up to 10,000 ids.
  const rows = await db
    .selectFrom('source_user_tombstones')
    .select('user_id')
    .where('user_id', '=', sql<string>`any(${ids}::text[])`)
    .execute();
  return new Set(rows.map((r) => r.user_id));
}

export async function isTombstoned(db: Db, userId: string): Promise<boolean> {
  return (await tombstonedUserIds(db, [userId])).has(userId);
}

/**
 * Why a refresh token of this user issued at `issuedAt` is not to be carried over: the user was deleted or
 * deactivated here, or its sessions were ended after the token was issued (the conditions adoption applies too,
 * grants.ts). Undefined when nothing stands in its way.
 */
export async function refusedSubject(
  db: Db,
  userId: string,
  issuedAt: Date,
): Promise<'tombstoned' | 'signed-out' | undefined> {
  const { rows } = await sql<{ tombstoned: boolean; signed_out: boolean }>`
    select ${tombstoned(sql`${userId}`)} as tombstoned, ${signedOutSince(sql`${userId}`, sql`${issuedAt}::timestamptz`)} as signed_out`.execute(
    db,
  );
  return rows[0].tombstoned ? 'tombstoned' : rows[0].signed_out ? 'signed-out' : undefined;
}
