import type { AppRef } from '../platform/store/provisioning-apps';
import type { UserProfile } from '../platform/store/users';

/**
 * The spec's Try-Confirm-Cancel rules, in one module that both the workflows and the activities import and that
 * imports neither (types aside): so it is workflow-safe, with no I/O, no clock and no randomness. The calls themselves
 * (HTTP, through `got`) are the activities'; the order of the phases, what an approval assigns, what counts as a
 * refusal and the words of a reason are here.
 */

/** The spec's Confirm and Cancel timeout: 10 s, fixed, not tunable. */
export const CONFIRM_CANCEL_TIMEOUT_SECONDS = 10;

/**
 * How long the Try calls to several apps one after another, then their Confirm calls, may take: each call gives up at
 * its own timeout (the app's TryTimeoutSeconds, the spec's 10 s), so all of them added up and one second more is only
 * the backstop for a stuck worker.
 */
export const tccRoundsSeconds = (apps: Array<{ tryTimeoutSeconds: number }>): number =>
  apps.reduce((sum, app) => sum + app.tryTimeoutSeconds + CONFIRM_CANCEL_TIMEOUT_SECONDS, 0) + 1;

/** An app's answer to Try: approved (with what it assigns), or not (with why). */
export type TryVerdict =
  | { approved: true; organizationId?: string; customAttributes?: Record<string, string> }
  | { approved: false; reason: string };

/** The words of every reason the service gives for an app's refusal or failure, so each reads the same everywhere. */
export const reasons = {
  /** A Try that did not come back with an answer the service can take (`what`: "timed out", "answered HTTP 503"). */
  tryFailed: (appId: string, what: string) => `Try to app ${appId} ${what}`,
  confirmFailed: (appId: string, what: string) => `Confirm to app ${appId} ${what}`,
  rejectedWithoutReason: (appId: string) => `app ${appId} rejected the user without a reason`,
  /** An approval whose values the store could not hold (`problem` names the field). */
  unstorableApproval: (appId: string, problem: string) => `app ${appId} approved with ${problem}`,
};

/** What an app's approved Try hands back: the spec's organization and attribute assignments. */
export interface Approval {
  appId: string;
  organizationId?: string;
  customAttributes?: Record<string, string>;
}

/**
 * Spec rules: an organization is applied only when the user has none; attributes merge key by key. Workflow-safe (the
 * workflow folds the confirmed approvals with it) and used by the Try round, where a later app sees earlier ones.
 */
export function applyApproval(user: UserProfile, approval: Approval): UserProfile {
  return {
    ...user,
    organizationId: user.organizationId ?? approval.organizationId ?? null,
    customAttributes: { ...user.customAttributes, ...approval.customAttributes },
  };
}

/** Only what confirmed apps assigned reaches the store, and only when it changed anything. */
export function assignedChanges(before: UserProfile, after: UserProfile) {
  const unchanged =
    before.organizationId === after.organizationId &&
    JSON.stringify(before.customAttributes) === JSON.stringify(after.customAttributes);
  return unchanged ? undefined : { organizationId: after.organizationId, customAttributes: after.customAttributes };
}

/** What the apps that confirmed assigned, folded in their order: what the store records with their provisions. */
export const assignedBy = (user: UserProfile, confirmed: Approval[]) =>
  assignedChanges(user, confirmed.reduce(applyApproval, user));

/**
 * The Try and Confirm phases of the spec's state table, walked in one step: one app after another in the given order,
 * each phase stopping at the first app that does not answer yes, Confirming only when every app approved. A step run
 * twice (the replay of a workflow task lost with its worker) sends the same calls again with the same transactionId,
 * which is what makes a TCC call safe to repeat.
 */
export interface TryRound {
  /** The apps that approved, in order, before the first refusal (all of them when there is none). */
  approvals: Approval[];
  /** The first app that refused, failed or timed out, and why. */
  rejection?: { appId: string; reason: string };
}

export interface ConfirmRound {
  /** The apps that confirmed, in order. */
  confirmed: string[];
  /** The first app whose Confirm failed; the apps after it were not called. */
  failure?: { appId: string; reason: string };
}

/** Trying: each app is asked with the user as the approvals before it left it (the spec's "later apps see"). */
export async function tryInTurn(
  apps: AppRef[],
  user: UserProfile,
  tryOne: (appId: string, user: UserProfile) => Promise<TryVerdict>,
): Promise<TryRound> {
  const approvals: Approval[] = [];
  let seen = user;
  for (const { appId } of apps) {
    let verdict: TryVerdict;
    try {
      verdict = await tryOne(appId, seen);
    } catch (error) {
      verdict = { approved: false, reason: reasons.tryFailed(appId, (error as Error).message) };
    }
    if (!verdict.approved) return { approvals, rejection: { appId, reason: verdict.reason } };
    const approval = { appId, organizationId: verdict.organizationId, customAttributes: verdict.customAttributes };
    approvals.push(approval);
    seen = applyApproval(seen, approval);
  }
  return { approvals };
}

/** Confirming, in the same order; the first failure ends the round. */
export async function confirmInTurn(
  appIds: string[],
  confirmOne: (appId: string) => Promise<void>,
): Promise<ConfirmRound> {
  const confirmed: string[] = [];
  for (const appId of appIds) {
    try {
      await confirmOne(appId);
    } catch (error) {
      return { confirmed, failure: { appId, reason: reasons.confirmFailed(appId, (error as Error).message) } };
    }
    confirmed.push(appId);
  }
  return { confirmed };
}

/** Confirming happens only when every app approved; after a refusal nothing is confirmed. */
export type TccRounds =
  { tried: Required<TryRound>; confirmed?: undefined } | { tried: { approvals: Approval[] }; confirmed: ConfirmRound };

/**
 * The rounds of a step that failed as a whole after it may have sent calls (its backstop on a stalled worker): which
 * apps approved or confirmed is unknown, so it counts as a rejection and every app counts as one to cancel.
 */
export function failedAsAWhole(apps: AppRef[], reason: string): TccRounds {
  return {
    tried: {
      approvals: apps.map((a) => ({ appId: a.appId })),
      rejection: { appId: apps[0].appId, reason: reasons.tryFailed(apps[0].appId, reason) },
    },
  };
}

/** How a step makes the calls: a Try of one app for the user, a Confirm of one app. */
export interface TccCalls {
  tryOne: (appId: string, user: UserProfile) => Promise<TryVerdict>;
  confirmOne: (appId: string) => Promise<void>;
}

/** Trying, then Confirming the apps that approved (all of them, or the phase ends before). */
export async function tryThenConfirmInTurn(
  apps: AppRef[],
  user: UserProfile,
  { tryOne, confirmOne }: TccCalls,
): Promise<TccRounds> {
  const { approvals, rejection } = await tryInTurn(apps, user, tryOne);
  if (rejection) return { tried: { approvals, rejection } };
  return {
    tried: { approvals },
    confirmed: await confirmInTurn(
      approvals.map((a) => a.appId),
      confirmOne,
    ),
  };
}

/**
 * The calls, then the records of the apps that confirmed, in the step that made the calls. Once a call is sent
 * nothing fails this: calls that end unexpectedly count as failed as a whole, and records that cannot be written now
 * (`record` answers undefined) are left to the workflow's step retried until it lands, so the calls are never made
 * again for a fault of the records.
 */
export async function tryConfirmThenRecord(
  apps: AppRef[],
  user: UserProfile,
  calls: TccCalls,
  record: (confirmedApps: string[], assigned: Assigned | undefined) => Promise<FinishResult | undefined>,
): Promise<{ rounds: TccRounds; finished?: FinishResult }> {
  const rounds = await tryThenConfirmInTurn(apps, user, calls).catch((error: unknown) =>
    failedAsAWhole(apps, `failed: ${(error as Error).message}`),
  );
  const confirmedApps = rounds.confirmed?.confirmed ?? [];
  if (confirmedApps.length === 0) return { rounds };
  const confirmed = rounds.tried.approvals.slice(0, confirmedApps.length);
  const finished = await record(confirmedApps, assignedBy(user, confirmed));
  return finished ? { rounds, finished } : { rounds };
}

/** What the apps that confirmed assigned, as the store records it with their provisions. */
export type Assigned = NonNullable<ReturnType<typeof assignedBy>>;

/** Where an attempt's records left the user: as stored afterwards, and every app it is provisioned into. */
export type FinishResult = { recorded: true; user: UserProfile; provisionedApps: string[] } | { recorded: false };
