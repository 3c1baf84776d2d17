import type { UserProfile } from '../platform/store/users';

/**
 * The spec's Try-Confirm-Cancel rules, in one module that both the workflows and the activities import and that
 * imports neither (types aside): so it is workflow-safe, with no I/O, no clock and no randomness. The calls themselves
 * (HTTP, through `got`) are the activities', and the order of the phases is the workflow's (workflows/transaction.ts);
 * what an approval assigns, what counts as a refusal and the words of a reason are here.
 */

/** The spec's Confirm and Cancel timeout: 10 s, fixed, not tunable. */
export const CONFIRM_CANCEL_TIMEOUT_SECONDS = 10;

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
 * Spec rules: an organization is applied only when the user has none; attributes merge key by key. The workflow folds
 * each approval in as it comes, so a later app's Try sees what the earlier ones assigned.
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

/** What the apps that confirmed assigned, as the store records it with their provisions. */
export type Assigned = NonNullable<ReturnType<typeof assignedBy>>;

/** Where an attempt's records left the user: as stored afterwards, and every app it is provisioned into. */
export type FinishResult = { recorded: true; user: UserProfile; provisionedApps: string[] } | { recorded: false };
