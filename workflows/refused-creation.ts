import { proxyLocalActivities } from '@temporalio/workflow';
import type { ProvisioningActivities } from '../activities/provisioning';
import { STORE } from './activity-policies';
import type { CreationOutcome, ProvisioningOutcome } from './provisioning';

const store = proxyLocalActivities<ProvisioningActivities>(STORE);

/** A creation the apps refused, or that named apps that do not exist, leaves no user behind. */
export async function deleteRefusedUser(userId: string, outcome: ProvisioningOutcome): Promise<CreationOutcome> {
  if (outcome.status !== 'rejected' && outcome.status !== 'unknown-apps') return outcome;
  // No removal key: the replay of a refused creation creates the user again, and that user must go too.
  await store.deleteUser(userId);
  return { ...outcome, userDeleted: true };
}
