import { ActivityFailure, log, ParentClosePolicy, proxyLocalActivities, startChild, TimeoutFailure } from '@temporalio/workflow';
import type { AppRef, ProvisioningActivities } from '../activities/provisioning';
import type { UserProfile } from '../store/users';
import { backgroundCancelWorkflowId } from './ids';

/** Fixed by the spec: Confirm and Cancel time out after 10 seconds. */
const CONFIRM_CANCEL_TIMEOUT = '10 seconds';
/** A rejection or timeout is an answer, not a fault: Try, Confirm and Cancel are never retried inline. */
const ONCE = { maximumAttempts: 1 };

const store = proxyLocalActivities<ProvisioningActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 5, initialInterval: '200 milliseconds' },
});
const tccCalls = proxyLocalActivities<ProvisioningActivities>({ startToCloseTimeout: CONFIRM_CANCEL_TIMEOUT, retry: ONCE });

type Ending =
  | { status: 'provisioned'; confirmedApps: string[] }
  | { status: 'rejected'; appId: string; reason: string }
  | { status: 'partially-confirmed'; appId: string; reason: string; confirmedApps: string[]; unconfirmedApps: string[] };

/** Every ending carries the user as stored afterwards and all apps it is provisioned into (earlier attempts included). */
export type TransactionResult = Ending & { user: UserProfile; provisionedApps: string[] };

interface Approval {
  appId: string;
  organizationId?: string;
  customAttributes?: Record<string, string>;
}

function failureReason(error: unknown): string {
  if (error instanceof ActivityFailure) {
    if (error.cause instanceof TimeoutFailure) return 'timed out';
    return error.cause?.message ?? error.message;
  }
  return (error as Error).message;
}

/** Spec rules: an organization is applied only when the user has none; attributes merge key by key. */
function applyApproval(user: UserProfile, approval: Approval): UserProfile {
  return {
    ...user,
    organizationId: user.organizationId ?? approval.organizationId ?? null,
    customAttributes: { ...user.customAttributes, ...approval.customAttributes },
  };
}

async function tryApp(app: AppRef, transactionId: string, user: UserProfile) {
  // The HTTP call gives up at TryTimeoutSeconds itself; the activity timeout is the backstop for a stuck worker.
  const { tryApp } = proxyLocalActivities<ProvisioningActivities>({ startToCloseTimeout: (app.tryTimeoutSeconds + 1) * 1000, retry: ONCE });
  try {
    return await tryApp({ appId: app.appId, transactionId, user });
  } catch (error) {
    return { approved: false as const, reason: `Try to app ${app.appId} ${failureReason(error)}` };
  }
}

/**
 * Cancel is best effort: one inline call so the app can drop its pending record at once; if that fails it is
 * logged, and a detached workflow keeps retrying after the caller has its answer (the app's TTL stays the net).
 */
async function cancel(appIds: string[], transactionId: string): Promise<void> {
  for (const appId of appIds) {
    try {
      await tccCalls.cancelApp({ appId, transactionId });
    } catch (error) {
      log.warn('Cancel failed; retrying in the background', { appId, transactionId, reason: failureReason(error) });
      await startChild('cancelInBackground', {
        workflowId: backgroundCancelWorkflowId(transactionId, appId),
        args: [{ appId, transactionId }],
        parentClosePolicy: ParentClosePolicy.ABANDON,
      });
    }
  }
}

/** The spec's provisioning state table, Start → Trying → Confirming → Provisioned / Partially confirmed / Cancelling → Ended. */
export async function runTransaction(apps: AppRef[], transactionId: string, initialUser: UserProfile): Promise<TransactionResult> {
  const { ending, confirmedUser } = await tryThenConfirm(apps, transactionId, initialUser);
  const { user, provisionedApps } = await store.finishProvisioning({ user: initialUser, assigned: assignedChanges(initialUser, confirmedUser) });
  return { ...ending, user, provisionedApps };
}

async function tryThenConfirm(apps: AppRef[], transactionId: string, initialUser: UserProfile): Promise<{ ending: Ending; confirmedUser: UserProfile }> {
  // Trying: one app after another, so a later app sees what an earlier one assigned.
  let user = initialUser;
  const approvals: Approval[] = [];
  for (const app of apps) {
    const verdict = await tryApp(app, transactionId, user);
    if (!verdict.approved) {
      await cancel(approvals.map((a) => a.appId), transactionId);
      return { ending: { status: 'rejected', appId: app.appId, reason: verdict.reason }, confirmedUser: initialUser };
    }
    const approval = { appId: app.appId, organizationId: verdict.organizationId, customAttributes: verdict.customAttributes };
    approvals.push(approval);
    user = applyApproval(user, approval);
  }

  // Confirming, in the same order; each app's provision record is written as soon as it confirmed.
  let confirmedUser = initialUser;
  const confirmed: string[] = [];
  for (const [index, approval] of approvals.entries()) {
    try {
      await tccCalls.confirmApp({ appId: approval.appId, transactionId, userId: initialUser.userId });
    } catch (error) {
      const reason = `Confirm to app ${approval.appId} ${failureReason(error)}`;
      const unconfirmed = approvals.slice(index).map((a) => a.appId);
      await cancel(unconfirmed, transactionId);
      const ending: Ending =
        confirmed.length === 0
          ? { status: 'rejected', appId: approval.appId, reason }
          : { status: 'partially-confirmed', appId: approval.appId, reason, confirmedApps: confirmed, unconfirmedApps: unconfirmed };
      return { ending, confirmedUser };
    }
    confirmed.push(approval.appId);
    confirmedUser = applyApproval(confirmedUser, approval);
  }
  return { ending: { status: 'provisioned', confirmedApps: confirmed }, confirmedUser };
}

/** Only what confirmed apps assigned reaches the store, and only when it changed anything. */
function assignedChanges(before: UserProfile, after: UserProfile) {
  const unchanged =
    before.organizationId === after.organizationId && JSON.stringify(before.customAttributes) === JSON.stringify(after.customAttributes);
  return unchanged ? undefined : { organizationId: after.organizationId, customAttributes: after.customAttributes };
}
