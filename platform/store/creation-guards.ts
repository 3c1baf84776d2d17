import { sql } from 'kysely';
import type { Db } from './database';
import type { StoredAnswer } from './schema';
import { normalize } from './users';
import { updatedAny } from './row-counts';
import { deleteCreatedBefore } from './retention';

/** Reserves the e-mail for one creation attempt; answers the holder's workflow id when another attempt holds it. */
export async function reserveEmail(
  db: Db,
  email: string,
  workflowId: string,
): Promise<{ reserved: true } | { reserved: false; holder: string; since: Date }> {
  const inserted = await db
    .insertInto('creation_reservations')
    .values({ normalized_email: normalize(email), workflow_id: workflowId })
    .onConflict((oc) => oc.column('normalized_email').doNothing())
    .executeTakeFirst();
  if (Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0) return { reserved: true };
  const row = await db
    .selectFrom('creation_reservations')
    .select(['workflow_id', 'created_at'])
    .where('normalized_email', '=', normalize(email))
    .executeTakeFirst();
  if (!row) return reserveEmail(db, email, workflowId);
  return { reserved: false, holder: row.workflow_id, since: row.created_at };
}

/** Takes over a reservation whose attempt has ended without releasing it (its API process died, or it outlived its wait). */
export async function takeOverReservation(
  db: Db,
  email: string,
  staleHolder: string,
  workflowId: string,
): Promise<boolean> {
  const result = await db
    .updateTable('creation_reservations')
    .set({ workflow_id: workflowId, created_at: new Date() })
    .where('normalized_email', '=', normalize(email))
    .where('workflow_id', '=', staleHolder)
    .executeTakeFirst();
  return updatedAny(result);
}

export async function releaseEmail(db: Db, email: string, workflowId: string): Promise<void> {
  await db
    .deleteFrom('creation_reservations')
    .where('normalized_email', '=', normalize(email))
    .where('workflow_id', '=', workflowId)
    .execute();
}

/** The reservations taken more than `seconds` ago (by the store's clock), oldest first, at most `limit`. */
export function listReservationsOlderThan(db: Db, seconds: number, limit: number) {
  return db
    .selectFrom('creation_reservations')
    .select(['normalized_email', 'workflow_id'])
    .where('created_at', '<', sql<Date>`now() - make_interval(secs => ${seconds})`)
    .orderBy('created_at')
    .limit(limit)
    .execute();
}

/** Removes a reservation if the same attempt still holds it (one taken over meanwhile stays). */
export async function dropReservation(db: Db, normalizedEmail: string, workflowId: string): Promise<boolean> {
  const result = await db
    .deleteFrom('creation_reservations')
    .where('normalized_email', '=', normalizedEmail)
    .where('workflow_id', '=', workflowId)
    .executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** How long a client may repeat a request under the same Idempotency-Key. */
export const IDEMPOTENCY_KEY_HOURS = 24;

export type KeyClaim =
  { status: 'new' } | { status: 'other-body' } | { status: 'answered'; answer: StoredAnswer } | { status: 'in-flight' };

/** The first request with a key claims it; a repeat learns whether the body matches and whether there is an answer. */
export async function claimIdempotencyKey(db: Db, scope: string, key: string, fingerprint: string): Promise<KeyClaim> {
  const cutoff = new Date(Date.now() - IDEMPOTENCY_KEY_HOURS * 3600_000);
  await db
    .deleteFrom('idempotency_keys')
    .where('scope', '=', scope)
    .where('key', '=', key)
    .where('created_at', '<', cutoff)
    .execute();
  const inserted = await db
    .insertInto('idempotency_keys')
    .values({ scope, key, fingerprint })
    .onConflict((oc) => oc.columns(['scope', 'key']).doNothing())
    .executeTakeFirst();
  if (Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0) return { status: 'new' };
  const row = await db
    .selectFrom('idempotency_keys')
    .select(['fingerprint', 'answer'])
    .where('scope', '=', scope)
    .where('key', '=', key)
    .executeTakeFirst();
  if (!row) return claimIdempotencyKey(db, scope, key, fingerprint);
  if (row.fingerprint !== fingerprint) return { status: 'other-body' };
  return row.answer ? { status: 'answered', answer: row.answer } : { status: 'in-flight' };
}

export async function saveIdempotentAnswer(db: Db, scope: string, key: string, answer: StoredAnswer): Promise<void> {
  await db
    .updateTable('idempotency_keys')
    .set({ answer: JSON.stringify(answer) })
    .where('scope', '=', scope)
    .where('key', '=', key)
    .execute();
}

export function purgeExpiredIdempotencyKeys(db: Db): Promise<number> {
  return deleteCreatedBefore(db, 'idempotency_keys', IDEMPOTENCY_KEY_HOURS);
}
