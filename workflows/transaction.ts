import {
  ActivityFailure,
  log,
  ParentClosePolicy,
  patched,
  proxyLocalActivities,
  startChild,
  TimeoutFailure,
} from '@temporalio/workflow';
import type { AppRef, ProvisioningActivities } from '../activities/provisioning';
import type { UserProfile } from '../store/users';
import { STORE, TCC_CALL, tryCall } from './activity-policies';
import { cancelInBackground, deprovisionInBackground } from './background';
import { backgroundCancelWorkflowId } from './ids';
import { userIdOfParent } from './search-attributes';

const store = proxyLocalActivities<ProvisioningActivities>(STORE);
const tccCalls = proxyLocalActivities<ProvisioningActivities>(TCC_CALL);

type Ending =
  | { status: 'provisioned'; confirmedApps: string[] }
  | { status: 'rejected'; appId: string; reason: string }
  | {
      status: 'partially-confirmed';
      appId: string;
      reason: string;
      confirmedApps: string[];
      unconfirmedApps: string[];
    };

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
  const { tryApp } = proxyLocalActivities<ProvisioningActivities>(tryCall(app));
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
      await startChild(cancelInBackground, {
        workflowId: backgroundCancelWorkflowId(transactionId, appId),
        args: [{ appId, transactionId }],
        typedSearchAttributes: userIdOfParent(),
        parentClosePolicy: ParentClosePolicy.ABANDON,
      });
    }
  }
}

/** The spec's provisioning state table, Start → Trying → Confirming → Provisioned / Partially confirmed / Cancelling → Ended. */
export async function runTransaction(
  apps: AppRef[],
  transactionId: string,
  initialUser: UserProfile,
): Promise<TransactionResult> {
  const { ending, confirmedUser } = await tryThenConfirm(apps, transactionId, initialUser);
  const { user, provisionedApps } = await store.finishProvisioning({
    user: initialUser,
    assigned: assignedChanges(initialUser, confirmedUser),
  });
  return { ...ending, user, provisionedApps };
}

async function tryThenConfirm(
  apps: AppRef[],
  transactionId: string,
  initialUser: UserProfile,
): Promise<{ ending: Ending; confirmedUser: UserProfile }> {
  // Trying: one app after another, so a later app sees what an earlier one assigned.
  let user = initialUser;
  const approvals: Approval[] = [];
  for (const app of apps) {
    const verdict = await tryApp(app, transactionId, user);
    if (!verdict.approved) {
      await cancel(
        approvals.map((a) => a.appId),
        transactionId,
      );
      return { ending: { status: 'rejected', appId: app.appId, reason: verdict.reason }, confirmedUser: initialUser };
    }
    const approval = {
      appId: app.appId,
      organizationId: verdict.organizationId,
      customAttributes: verdict.customAttributes,
    };
    approvals.push(approval);
    user = applyApproval(user, approval);
  }

  // Confirming, in the same order. The Confirm call has the spec's 10 s and one attempt; once an app confirmed, its
  // provision record is a step of its own, retried until it lands, so an app that confirmed is always recorded.
  // Runs recorded before the two were apart made both in one step.
  let confirmedUser = initialUser;
  const confirmed: string[] = [];
  for (const [index, approval] of approvals.entries()) {
    const recordApart = patched('confirm-then-record');
    try {
      await tccCalls.confirmApp({ appId: approval.appId, transactionId, userId: initialUser.userId });
    } catch (error) {
      const reason = `Confirm to app ${approval.appId} ${failureReason(error)}`;
      const unconfirmed = approvals.slice(index).map((a) => a.appId);
      await cancel(unconfirmed, transactionId);
      const ending: Ending =
        confirmed.length === 0
          ? { status: 'rejected', appId: approval.appId, reason }
          : {
              status: 'partially-confirmed',
              appId: approval.appId,
              reason,
              confirmedApps: confirmed,
              unconfirmedApps: unconfirmed,
            };
      return { ending, confirmedUser };
    }
    if (
      recordApart &&
      !(await store.recordProvision({ appId: approval.appId, userId: initialUser.userId, transactionId }))
    ) {
      // The user was deleted while this attempt ran (its deletion told the apps recorded so far): the app that just
      // confirmed must not keep it, and the apps still waiting are cancelled.
      log.warn('User deleted during provisioning', { appId: approval.appId, transactionId });
      await deprovisionInBackground(initialUser.userId, [approval.appId]);
      await cancel(
        approvals.slice(index + 1).map((a) => a.appId),
        transactionId,
      );
      return {
        ending: {
          status: 'rejected',
          appId: approval.appId,
          reason: 'the user was deleted while it was being provisioned',
        },
        confirmedUser: initialUser,
      };
    }
    confirmed.push(approval.appId);
    confirmedUser = applyApproval(confirmedUser, approval);
  }
  return { ending: { status: 'provisioned', confirmedApps: confirmed }, confirmedUser };
}

/** Only what confirmed apps assigned reaches the store, and only when it changed anything. */
function assignedChanges(before: UserProfile, after: UserProfile) {
  const unchanged =
    before.organizationId === after.organizationId &&
    JSON.stringify(before.customAttributes) === JSON.stringify(after.customAttributes);
  return unchanged ? undefined : { organizationId: after.organizationId, customAttributes: after.customAttributes };
}
