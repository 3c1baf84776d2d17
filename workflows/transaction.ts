import {
  ActivityFailure,
  log,
  ParentClosePolicy,
  proxyLocalActivities,
  startChild,
  TimeoutFailure,
} from '@temporalio/workflow';
import type { AppRef, ProvisioningActivities } from '../activities/provisioning';
import type { TccRounds } from '../activities/provisioning/rounds';
import type { UserProfile } from '../store/users';
import { applyApproval } from './approval';
import { STORE, TCC_CALL, tccRounds } from './activity-policies';
import { cancelInBackground, deprovisionInBackground } from './background';
import { backgroundCancelWorkflowId } from './ids';
import { userIdOfParent } from './search-attributes';

const store = proxyLocalActivities<ProvisioningActivities>(STORE);
const tccCalls = proxyLocalActivities<ProvisioningActivities>(TCC_CALL);

export type Ending =
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

export function failureReason(error: unknown): string {
  if (error instanceof ActivityFailure) {
    if (error.cause instanceof TimeoutFailure) return 'timed out';
    return error.cause?.message ?? error.message;
  }
  return (error as Error).message;
}

/**
 * Cancel is best effort: one inline call so the app can drop its pending record at once; if that fails it is
 * logged, and a detached workflow keeps retrying after the caller has its answer (the app's TTL stays the net).
 */
export async function cancel(appIds: string[], transactionId: string): Promise<void> {
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

/**
 * The spec's provisioning state table, Start → Trying → Confirming → Provisioned / Partially confirmed / Cancelling →
 * Ended. The Try and Confirm calls are made by one step that walks the apps one after another in each phase
 * (activities/provisioning/rounds.ts), so an attempt costs the same few workflow steps whatever the number of apps.
 * `provisionedBefore`: the apps the user had when the attempt began, its answer when no app confirms.
 */
export async function runTransaction(
  apps: AppRef[],
  transactionId: string,
  user: UserProfile,
  provisionedBefore: string[],
): Promise<TransactionResult> {
  // Trying, one app after another so that a later app sees what an earlier one assigned; then Confirming in the same
  // order, each call once with its own timeout. A step that fails as a whole (its backstop timeout on a stalled
  // worker) leaves unknown which apps approved or confirmed: it counts as a rejection, and every app is cancelled.
  const { tryThenConfirmApps } = proxyLocalActivities<ProvisioningActivities>(tccRounds(apps));
  const rounds = await tryThenConfirmApps({ apps, transactionId, user }).catch((error: unknown): TccRounds => ({
    tried: {
      approvals: apps.map((a) => ({ appId: a.appId })),
      rejection: { appId: apps[0].appId, reason: `Try to app ${apps[0].appId} ${failureReason(error)}` },
    },
  }));
  if (!rounds.confirmed) {
    await cancel(
      rounds.tried.approvals.map((a) => a.appId),
      transactionId,
    );
    return { status: 'rejected', ...rounds.tried.rejection, user, provisionedApps: provisionedBefore };
  }

  const { approvals } = rounds.tried;
  const round = rounds.confirmed;
  const confirmed = approvals.slice(0, round.confirmed.length);
  const unconfirmed = approvals.slice(confirmed.length).map((a) => a.appId);

  // The apps that confirmed are recorded first, by a step of their own retried until it lands, so an app that
  // confirmed is always recorded; what they assigned is written with them. Then the apps still waiting are cancelled.
  const finished =
    confirmed.length === 0
      ? ({ recorded: true, user, provisionedApps: provisionedBefore } as const)
      : await store.recordAndFinish({
          user,
          transactionId,
          confirmedApps: round.confirmed,
          assigned: assignedChanges(user, confirmed.reduce(applyApproval, user)),
        });
  await cancel(unconfirmed, transactionId);

  if (!finished.recorded) {
    // The user was deleted while this attempt ran (its deletion told the apps recorded by then): the apps that just
    // confirmed must not keep it.
    log.warn('User deleted during provisioning', { transactionId });
    await deprovisionInBackground(user.userId, round.confirmed);
    return {
      status: 'rejected',
      appId: round.confirmed[0],
      reason: 'the user was deleted while it was being provisioned',
      user,
      provisionedApps: [],
    };
  }
  const answer = { user: finished.user, provisionedApps: finished.provisionedApps };
  if (!round.failure) return { status: 'provisioned', confirmedApps: round.confirmed, ...answer };
  if (confirmed.length === 0) return { status: 'rejected', ...round.failure, ...answer };
  return {
    status: 'partially-confirmed',
    ...round.failure,
    confirmedApps: round.confirmed,
    unconfirmedApps: unconfirmed,
    ...answer,
  };
}

/** Only what confirmed apps assigned reaches the store, and only when it changed anything. */
export function assignedChanges(before: UserProfile, after: UserProfile) {
  const unchanged =
    before.organizationId === after.organizationId &&
    JSON.stringify(before.customAttributes) === JSON.stringify(after.customAttributes);
  return unchanged ? undefined : { organizationId: after.organizationId, customAttributes: after.customAttributes };
}
