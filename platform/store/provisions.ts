import type { Db } from './database';
import { isForeignKeyViolation } from './errors';

export async function listProvisionedApps(db: Db, userId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('user_provisions')
    .select('app_id')
    .where('user_id', '=', userId)
    .orderBy('app_id')
    .execute();
  return rows.map((r) => r.app_id);
}

/**
 * A provision record for each app of one attempt, answering every app the user is provisioned into afterwards
 * (sorted, as listProvisionedApps), in one round trip; undefined when the user is gone (deleted while its attempt
 * ran). Idempotent: a second record for the same user and app is the same fact, not an error. The statement's own inserts are not
 * in its snapshot of the table, hence the union.
 */
export async function recordProvisions(
  db: Db,
  provisions: { userId: string; appIds: string[]; transactionId: string },
): Promise<string[] | undefined> {
  const { userId, appIds, transactionId } = provisions;
  if (appIds.length === 0) return listProvisionedApps(db, userId);
  try {
    const rows = await db
      .with('recorded', (db) =>
        db
          .insertInto('user_provisions')
          .values(appIds.map((appId) => ({ user_id: userId, app_id: appId, transaction_id: transactionId })))
          .onConflict((oc) => oc.columns(['user_id', 'app_id']).doNothing())
          .returning('app_id'),
      )
      .selectFrom('user_provisions')
      .select('app_id')
      .where('user_id', '=', userId)
      .union((eb) => eb.selectFrom('recorded').select('app_id'))
      .orderBy('app_id')
      .execute();
    return rows.map((r) => r.app_id);
  } catch (error) {
    if (isForeignKeyViolation(error)) return undefined;
    throw error;
  }
}

/** The apps each of these users is provisioned into (sorted, as listProvisionedApps), in one round trip. */
export async function listProvisionedAppsOf(db: Db, userIds: string[]): Promise<Map<string, string[]>> {
  const apps = new Map(userIds.map((id) => [id, [] as string[]]));
  if (userIds.length === 0) return apps;
  const rows = await db
    .selectFrom('user_provisions')
    .select(['user_id', 'app_id'])
    .where('user_id', 'in', userIds)
    .orderBy('app_id')
    .execute();
  for (const row of rows) apps.get(row.user_id)?.push(row.app_id);
  return apps;
}
