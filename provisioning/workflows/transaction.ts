import {
  ActivityFailure,
  log,
  ParentClosePolicy,
  proxyLocalActivities,
  startChild,
  TimeoutFailure,
} from '@temporalio/workflow';
import type { FirstStep, ProvisioningActivities } from '../activities';
import type { UserProfile } from '../../platform/store/users';
import { assignedBy, failedAsAWhole } from '../tcc';
import { STORE, TCC_CALL, tccRounds } from './activity-policies';
import { cancelInBackground, deprovisionInBackground } from './background';
import { backgroundCancelWorkflowId } from './ids';
import { userIdOfParent } from '../../platform/temporal/search-attributes';

// Store steps, each retried until it lands (STORE): named for that, not for the store module they call.
const untilLanded = proxyLocalActivities<ProvisioningActivities>(STORE);
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
 * Ended, from the attempt's first step (FirstStep): the user, the apps it needs, the apps it had when the attempt
 * began (its answer when no app confirms), and usually the calls and the records already made by that step.
 */
export async function runTransaction(first: FirstStep, transactionId: string): Promise<TransactionResult> {
  const { apps, user, provisionedApps: provisionedBefore } = first;
  // Trying, one app after another so that a later app sees what an earlier one assigned; then Confirming in the same
  // order, each call once with its own timeout (tryThenConfirmInTurn in provisioning/tcc.ts). The first step made them when
  // their timeouts fit in it; otherwise they are a step of their own, which, if it fails as a whole (its backstop on
  // a stalled worker), leaves unknown which apps approved or confirmed: a rejection, and every app is cancelled.
  const { tryThenConfirmApps } = proxyLocalActivities<ProvisioningActivities>(tccRounds(apps));
  const rounds =
    first.rounds ??
    (await tryThenConfirmApps({ apps, transactionId, user }).catch((error: unknown) =>
      failedAsAWhole(apps, failureReason(error)),
    ));
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

  // The apps that confirmed are recorded first, with what they assigned, so an app that confirmed is always recorded:
  // by the first step right after its calls, or, when that write failed (or the calls had a step of their own), by a
  // step of its own retried until it lands, never by making the calls again. Then the apps still waiting are cancelled.
  const finished =
    first.finished ??
    (confirmed.length === 0
      ? ({ recorded: true, user, provisionedApps: provisionedBefore } as const)
      : await untilLanded.recordAndFinish({
          user,
          transactionId,
          confirmedApps: round.confirmed,
          assigned: assignedBy(user, confirmed),
        }));
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
