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
 * Idempotent: a second record for the same user and app is the same fact, not an error. False when the user is gone
 * (deleted while its attempt ran): there is nobody to record the app for.
 */
export async function recordProvision(
  db: Db,
  provision: { userId: string; appId: string; transactionId: string },
): Promise<boolean> {
  try {
    await db
      .insertInto('user_provisions')
      .values({ user_id: provision.userId, app_id: provision.appId, transaction_id: provision.transactionId })
      .onConflict((oc) => oc.columns(['user_id', 'app_id']).doNothing())
      .execute();
    return true;
  } catch (error) {
    if (isForeignKeyViolation(error)) return false;
    throw error;
  }
}
