import { proxyLocalActivities } from '@temporalio/workflow';
import type { FirstStep, ProvisioningActivities } from '../activities/provisioning-activities';
import { STORE } from './activity-policies';
import type { CreationOutcome, ProvisioningOutcome } from './outcomes';

// Store steps, each retried until it lands (STORE): named for that, not for the store module they call.
const untilLanded = proxyLocalActivities<ProvisioningActivities>(STORE);

/**
 * A creation the apps refused, or that named apps that do not exist, leaves no user behind, unless an app already
 * holds it: then the answer is what the first run's was, a partial confirmation. That happens only to a run again of
 * an attempt whose first run had apps confirm (a replay runs the first step again after a worker was lost, finds the
 * user and those apps' records, and its own calls may fail): the apps holding the user must keep it.
 */
export async function deleteRefusedUser(
  first: Pick<FirstStep, 'apps'>,
  outcome: ProvisioningOutcome,
): Promise<CreationOutcome> {
  if (outcome.status !== 'rejected' && outcome.status !== 'unknown-apps') return outcome;
  if (outcome.status === 'rejected' && outcome.provisionedApps.length > 0) {
    const held = outcome.provisionedApps;
    return {
      ...outcome,
      status: 'partially-confirmed',
      confirmedApps: held,
      unconfirmedApps: first.apps.map((a) => a.appId).filter((id) => !held.includes(id)),
    };
  }
  // No removal key: the replay of a refused creation creates the user again, and that user must go too.
  await untilLanded.deleteUser(outcome.user.userId);
  return { ...outcome, userDeleted: true };
}
