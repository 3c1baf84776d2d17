import {
  ActivityFailure,
  log,
  ParentClosePolicy,
  proxyLocalActivities,
  startChild,
  TimeoutFailure,
} from '@temporalio/workflow';
import type { FirstStep, ProvisioningActivities } from '../activities/provisioning-activities';
import type { AppRef } from '../store/provisioning-apps';
import type { UserProfile } from '../../platform/store/users';
import { applyApproval, assignedBy, reasons, type Approval, type FinishResult } from '../tcc';
import { STORE, TCC_CALL, toApp, tryCall } from './activity-policies';
import { cancelInBackground, deprovisionInBackground } from './background';
import { backgroundCancelWorkflowId } from './ids';
import { userIdOfParent } from '../../platform/temporal/search-attributes';

// Store steps, each retried until it lands (STORE): named for that, not for the store module they call.
const untilLanded = proxyLocalActivities<ProvisioningActivities>(STORE);

// A call to one app is a step of its own whose summary names the phase and the app (toApp), as the Temporal UI shows it.
const tryAt = (app: AppRef) => proxyLocalActivities<ProvisioningActivities>(toApp(tryCall(app), 'Try', app.appId));
const callTo = (appId: string, phase: 'Confirm' | 'Cancel') =>
  proxyLocalActivities<ProvisioningActivities>(toApp(TCC_CALL, phase, appId));

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

/** The first app that did not answer yes in a phase, and why. */
type Refusal = { appId: string; reason: string };

/** How Trying ends: every app approved, or one refused after the approvals before it (the compensation stack). */
type Trying = { approvals: Approval[]; refusal?: Refusal };

/** How Confirming ends: every app confirmed, or one failed after the confirmations before it. */
type Confirming = { confirmed: Approval[]; unconfirmed: string[]; failure?: Refusal };

export function failureReason(error: unknown): string {
  if (error instanceof ActivityFailure) {
    if (error.cause instanceof TimeoutFailure) return 'timed out';
    return error.cause?.message ?? error.message;
  }
  return (error as Error).message;
}

/**
 * Trying: one app after another, each asked with the user as the approvals before it left it (the spec's "later apps
 * see"), until the first that does not approve. A step that fails (its backstop on a stuck worker, an app no longer
 * configured) is that app's refusal.
 */
async function tryEach(apps: AppRef[], user: UserProfile, transactionId: string): Promise<Trying> {
  const approvals: Approval[] = [];
  let seen = user;
  for (const app of apps) {
    const { appId } = app;
    const verdict = await tryAt(app)
      .tryApp({ appId, transactionId, user: seen })
      .catch((error: unknown) => ({
        approved: false as const,
        reason: reasons.tryFailed(appId, failureReason(error)),
      }));
    if (!verdict.approved) return { approvals, refusal: { appId, reason: verdict.reason } };
    const approval = { appId, organizationId: verdict.organizationId, customAttributes: verdict.customAttributes };
    approvals.push(approval);
    seen = applyApproval(seen, approval);
  }
  return { approvals };
}

/** Confirming, in the same order; the first failure ends the phase and leaves the apps from it on unconfirmed. */
async function confirmEach(approvals: Approval[], transactionId: string): Promise<Confirming> {
  for (const [i, approval] of approvals.entries()) {
    const { appId } = approval;
    try {
      await callTo(appId, 'Confirm').confirmApp({ appId, transactionId });
    } catch (error) {
      const failure = { appId, reason: reasons.confirmFailed(appId, failureReason(error)) };
      return { confirmed: approvals.slice(0, i), unconfirmed: approvals.slice(i).map((a) => a.appId), failure };
    }
  }
  return { confirmed: approvals, unconfirmed: [] };
}

/**
 * Cancelling, the compensation: each app that approved and was not confirmed, in order, each Cancel an activity of its
 * own as Temporal's saga sample (temporalio/samples-typescript, saga) runs each compensation; the Cancels stand alone,
 * so the order they run in does not matter. Best effort: one call so the app can drop its pending record at once; if that fails it is logged, and a detached workflow keeps retrying after
 * the caller has its answer (the app's TTL stays the net).
 */
async function cancelEach(appIds: string[], transactionId: string): Promise<void> {
  for (const appId of appIds) {
    try {
      await callTo(appId, 'Cancel').cancelApp({ appId, transactionId });
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
 * The spec's provisioning state table, from the attempt's first step (FirstStep: the user, the apps it needs, the apps
 * it had when the attempt began): Start → Trying → (a refusal) Cancelling → Ended, or Trying → Confirming → Recording
 * → Provisioned / Partially confirmed, cancelling the apps left unconfirmed. Each call is a step of its own, named by
 * its app; every step sends the attempt's transactionId, so a step run again (a replay) is the same call to the app.
 */
export async function runTransaction(first: FirstStep, transactionId: string): Promise<TransactionResult> {
  const { apps, user, provisionedApps: provisionedBefore } = first;
  const trying = await tryEach(apps, user, transactionId);
  if (trying.refusal) {
    await cancelEach(
      trying.approvals.map((a) => a.appId),
      transactionId,
    );
    return { status: 'rejected', ...trying.refusal, user, provisionedApps: provisionedBefore };
  }
  const confirming = await confirmEach(trying.approvals, transactionId);
  // The apps that confirmed are recorded before anything else, with what they assigned, by a step retried until it
  // lands: an app that confirmed is always recorded, and the calls are never made again for a fault of the store.
  const finished = await recordConfirmed(user, provisionedBefore, confirming.confirmed, transactionId);
  await cancelEach(confirming.unconfirmed, transactionId);
  return ending(user, confirming, finished, transactionId);
}

async function recordConfirmed(
  user: UserProfile,
  provisionedBefore: string[],
  confirmed: Approval[],
  transactionId: string,
): Promise<FinishResult> {
  if (confirmed.length === 0) return { recorded: true, user, provisionedApps: provisionedBefore };
  return untilLanded.recordAndFinish({
    user,
    transactionId,
    confirmedApps: confirmed.map((a) => a.appId),
    assigned: assignedBy(user, confirmed),
  });
}

/** Provisioned, partially confirmed, or (no app confirmed, or the user was deleted meanwhile) rejected. */
async function ending(
  user: UserProfile,
  confirming: Confirming,
  finished: FinishResult,
  transactionId: string,
): Promise<TransactionResult> {
  const confirmedApps = confirming.confirmed.map((a) => a.appId);
  if (!finished.recorded) {
    // The user was deleted while this attempt ran (its deletion told the apps recorded by then): the apps that just
    // confirmed must not keep it.
    log.warn('User deleted during provisioning', { transactionId });
    await deprovisionInBackground(user.userId, confirmedApps);
    return {
      status: 'rejected',
      appId: confirmedApps[0],
      reason: 'the user was deleted while it was being provisioned',
      user,
      provisionedApps: [],
    };
  }
  const answer = { user: finished.user, provisionedApps: finished.provisionedApps };
  const { failure, unconfirmed } = confirming;
  if (!failure) return { status: 'provisioned', confirmedApps, ...answer };
  if (confirmedApps.length === 0) return { status: 'rejected', ...failure, ...answer };
  return { status: 'partially-confirmed', ...failure, confirmedApps, unconfirmedApps: unconfirmed, ...answer };
}
