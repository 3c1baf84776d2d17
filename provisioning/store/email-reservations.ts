import { sql } from 'kysely';
import type { Db } from '../../platform/store/database';
import { normalize } from '../../platform/store/users';
import { updatedAny } from '../../platform/store/row-counts';

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
