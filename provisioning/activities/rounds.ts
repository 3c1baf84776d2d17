import type { AppRef } from '../../platform/store/provisioning-apps';
import type { UserProfile } from '../../platform/store/users';
import {
  assignedBy,
  failedAsAWhole,
  tryThenConfirmInTurn,
  type Assigned,
  type FinishResult,
  type TccRounds,
  type TryVerdict,
} from '../tcc';

/**
 * The calls, then the records of the apps that confirmed, in the step that made the calls. Once a call is sent
 * nothing fails this: calls that end unexpectedly count as failed as a whole, and records that cannot be written now
 * (`record` answers undefined) are left to the workflow's step retried until it lands, so the calls are never made
 * again for a fault of the records.
 */
export async function tryConfirmThenRecord(
  apps: AppRef[],
  user: UserProfile,
  tryOne: (appId: string, user: UserProfile) => Promise<TryVerdict>,
  confirmOne: (appId: string) => Promise<void>,
  record: (confirmedApps: string[], assigned: Assigned | undefined) => Promise<FinishResult | undefined>,
): Promise<{ rounds: TccRounds; finished?: FinishResult }> {
  const rounds = await tryThenConfirmInTurn(apps, user, tryOne, confirmOne).catch((error: unknown) =>
    failedAsAWhole(apps, `failed: ${(error as Error).message}`),
  );
  const confirmedApps = rounds.confirmed?.confirmed ?? [];
  if (confirmedApps.length === 0) return { rounds };
  const confirmed = rounds.tried.approvals.slice(0, confirmedApps.length);
  const finished = await record(confirmedApps, assignedBy(user, confirmed));
  return finished ? { rounds, finished } : { rounds };
}
