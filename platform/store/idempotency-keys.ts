import type { Db } from './database';
import type { StoredAnswer } from './schema';
import { deleteCreatedBefore } from './retention';

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
