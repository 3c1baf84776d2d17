import type { Transaction } from 'kysely';
import type { Db } from './database';
import type { Database, SignOutNotice } from './schema';
import { deleteCreatedBefore } from './retention';
import { updatedAny } from './row-counts';
import { endSignInsIn } from './oidc-payloads';
import { tombstoneUserIn } from './read-through-guards';

/** What removing a user (deleting or deactivating it) found, and the apps it took the user from. */
export interface Removal {
  found: boolean;
  appIds: string[];
  /** The clients whose sessions with the user the removal ended, to be told by back-channel logout. */
  signOuts: SignOutNotice[];
}

/**
 * A removal step runs again when its worker is lost before Temporal recorded it, and by then the user is gone (or its
 * provision records are): the second run must answer what the first did, or no app would be told. So the answer is
 * kept under the removal's own key (its workflow run) for as long as a replay may come.
 */
export const REMOVALS_KEPT_DAYS = 7;

/**
 * Runs `remove` in a transaction, once per key: a second run under the same key answers what the first stored.
 * Without a key it simply runs (a refused creation's removal, whose replay creates the user again first).
 */
export async function removeOnce(
  db: Db,
  removalId: string | undefined,
  remove: (trx: Transaction<Database>) => Promise<Removal>,
): Promise<Removal> {
  if (removalId === undefined) return db.transaction().execute(remove);
  return db.transaction().execute(async (trx) => {
    const stored = await storedRemoval(trx, removalId);
    if (stored) return stored;
    const removal = await remove(trx);
    const inserted = await trx
      .insertInto('user_removals')
      .values({
        removal_id: removalId,
        found: removal.found,
        app_ids: JSON.stringify(removal.appIds),
        sign_outs: JSON.stringify(removal.signOuts),
      })
      .onConflict((oc) => oc.column('removal_id').doNothing())
      .returning('removal_id')
      .executeTakeFirst();
    // A run that overlapped this one (a retry while the first still ran) stored its answer first; that one stands.
    return inserted ? removal : ((await storedRemoval(trx, removalId)) ?? removal);
  });
}

async function storedRemoval(trx: Transaction<Database>, removalId: string): Promise<Removal | undefined> {
  const row = await trx
    .selectFrom('user_removals')
    .select(['found', 'app_ids', 'sign_outs'])
    .where('removal_id', '=', removalId)
    .executeTakeFirst();
  return row && { found: row.found, appIds: row.app_ids, signOuts: row.sign_outs };
}

export function purgeOldRemovals(db: Db): Promise<number> {
  return deleteCreatedBefore(db, 'user_removals', REMOVALS_KEPT_DAYS * 24);
}

/**
 * The spec's soft-delete (SCIM's DELETE and deactivation): the user stays but is inactive and provisioned nowhere.
 * Under a `removalId` a second run answers what the first did, the apps it took the user from included.
 */
export async function deactivateUserReturningApps(db: Db, id: string, removalId?: string): Promise<Removal> {
  return removeOnce(db, removalId, async (trx) => {
    const updated = await trx
      .updateTable('users')
      .set({ active: false, updated_at: new Date() })
      .where('id', '=', id)
      .executeTakeFirst();
    const removed = await trx.deleteFrom('user_provisions').where('user_id', '=', id).returning('app_id').execute();
    // A deactivated user is signed out everywhere, and the clients that listen are told.
    const { signOuts } = await endSignInsIn(trx, id);
    // Neither the read-through window nor a later sweep (Upsert included) may bring the source's copy back over it.
    if (updatedAny(updated)) await tombstoneUserIn(trx, id, 'deactivated');
    return { found: updatedAny(updated), appIds: removed.map((r) => r.app_id), signOuts };
  });
}

export async function activateUser(db: Db, id: string): Promise<void> {
  await db.updateTable('users').set({ active: true, updated_at: new Date() }).where('id', '=', id).execute();
}
