import { proxyLocalActivities } from '@temporalio/workflow';
import type { FirstStep, ProvisioningActivities } from '../activities/provisioning';
import { STORE } from './activity-policies';
import { hasChange } from './patches';
import type { CreationOutcome, ProvisioningOutcome } from './provisioning';

const store = proxyLocalActivities<ProvisioningActivities>(STORE);

/**
 * A replay runs an attempt's first step again (a worker lost after later steps of the same workflow task), and that
 * run finds the user and the apps that confirmed in the first run; if its own calls then fail, the apps holding the
 * user must keep it. Runs recorded before this change deleted it.
 */
const KEEP_USER_AN_APP_HOLDS = 'keep-user-an-app-holds';

/**
 * A creation the apps refused, or that named apps that do not exist, leaves no user behind, unless an app already
 * holds it (only a run again of an attempt whose first run had apps confirm): then the answer is what that run's was,
 * a partial confirmation.
 */
export async function deleteRefusedUser(
  first: Pick<FirstStep, 'apps'>,
  outcome: ProvisioningOutcome,
): Promise<CreationOutcome> {
  if (outcome.status !== 'rejected' && outcome.status !== 'unknown-apps') return outcome;
  if (outcome.status === 'rejected' && outcome.provisionedApps.length > 0 && hasChange(KEEP_USER_AN_APP_HOLDS)) {
    const held = outcome.provisionedApps;
    return {
      ...outcome,
      status: 'partially-confirmed',
      confirmedApps: held,
      unconfirmedApps: first.apps.map((a) => a.appId).filter((id) => !held.includes(id)),
    };
  }
  // No removal key: the replay of a refused creation creates the user again, and that user must go too.
  await store.deleteUser(outcome.user.userId);
  return { ...outcome, userDeleted: true };
}
