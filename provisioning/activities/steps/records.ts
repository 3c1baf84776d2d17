import type { Db } from '../../../platform/store/database';
import { recordProvisions } from '../../../platform/store/provisions';
import { updateUserAttributes, type UserProfile } from '../../../platform/store/users';
import type { Assigned, FinishResult } from '../../tcc';

/** What the records of an attempt are made of: the apps that confirmed and what they assigned. */
export type RecordInput = { user: UserProfile; transactionId: string; confirmedApps: string[]; assigned?: Assigned };

/**
 * A provision record for every app that confirmed (first, so an app that confirmed is always recorded), then what
 * they assigned. Idempotent, like each write in it; `recorded: false` when the user is gone.
 */
export async function recordAndFinish(db: Db, input: RecordInput): Promise<FinishResult> {
  const { user, transactionId, confirmedApps, assigned } = input;
  const provisionedApps = await recordProvisions(db, { userId: user.userId, transactionId, appIds: confirmedApps });
  if (!provisionedApps) return { recorded: false };
  const stored = assigned && (await updateUserAttributes(db, user.userId, assigned));
  return { recorded: true, user: stored || user, provisionedApps };
}
