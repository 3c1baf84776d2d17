import { log, ParentClosePolicy, proxyActivities, startChild, workflowInfo } from '@temporalio/workflow';
import type { ProvisioningActivities } from '../activities/provisioning-activities';
import { BACKGROUND } from './activity-policies';
import { appDeprovisioningWorkflowId } from './ids';
import { userIdOfParent } from '../../platform/temporal/search-attributes';
import { NOTIFY_SIGN_OUT, signOutWorkflowId, type SignOutInput } from '../../platform/temporal/sign-out-workflow';
import type { SignOutNotice } from '../../platform/store/schema';

/**
 * Detached workflows that keep telling apps after the caller has its answer; started by function, never by name (but
 * for sign-in's back-channel logout, below).
 */
const background = proxyActivities<ProvisioningActivities>(BACKGROUND);

/** Best effort per the spec: a failure is logged and never blocks the other apps. */
export async function deprovisionApps(input: {
  userId: string;
  appIds: string[];
}): Promise<{ notified: string[]; failed: string[] }> {
  const results = await Promise.allSettled(
    input.appIds.map((appId) => background.deprovisionApp({ appId, userId: input.userId })),
  );
  const failed = input.appIds.filter((_, i) => results[i].status === 'rejected');
  for (const appId of failed) log.error('Deprovisioning DELETE gave up', { appId, userId: input.userId });
  return { notified: input.appIds.filter((id) => !failed.includes(id)), failed };
}

export async function cancelInBackground(input: {
  appId: string;
  transactionId: string;
}): Promise<{ cancelled: boolean }> {
  try {
    await background.cancelApp(input);
    return { cancelled: true };
  } catch {
    log.error('Cancel gave up; the app must expire its pending record', input);
    return { cancelled: false };
  }
}

/** Apps are told by a detached workflow that keeps retrying for a while, so the caller's answer never waits on them. */
export async function deprovisionInBackground(userId: string, appIds: string[]): Promise<void> {
  if (appIds.length === 0) return;
  await startChild(deprovisionApps, {
    workflowId: appDeprovisioningWorkflowId(userId, workflowInfo().runId),
    args: [{ userId, appIds }],
    typedSearchAttributes: userIdOfParent(),
    parentClosePolicy: ParentClosePolicy.ABANDON,
  });
}

/**
 * The clients of the removed user's sessions are told (back-channel logout) by sign-in's workflow, detached like the
 * apps' deprovisioning so a removal's answer never waits on them. Started by its type name: the workflow is sign-in's,
 * whose code provisioning does not import.
 */
export async function signOutInBackground(issuer: string | undefined, userId: string, notices: SignOutNotice[]) {
  if (!issuer || notices.length === 0) return;
  const input: SignOutInput = { issuer, userId, notices };
  await startChild(NOTIFY_SIGN_OUT, {
    workflowId: signOutWorkflowId(userId, workflowInfo().runId),
    args: [input],
    typedSearchAttributes: userIdOfParent(),
    parentClosePolicy: ParentClosePolicy.ABANDON,
  });
}
