import type { ActivityOptions, LocalActivityOptions } from '@temporalio/workflow';
import { CONFIRM_CANCEL_TIMEOUT_SECONDS, tccRoundsSeconds } from '../tcc';

/**
 * Every activity option the workflows use, named once. Workflow code only: no imports beyond types and the TCC core.
 *
 * The spec fixes Confirm and Cancel at 10 seconds and leaves Try to each app's TryTimeoutSeconds. A TCC call is
 * made once: a rejection or a timeout is an answer, not a fault, and retrying it would be a second Try or Confirm.
 */

/**
 * A store read or write: short, idempotent, retried until it lands. A write that records what an app already
 * did (a Confirm) must never be given up on, or the app would hold a user the service forgot.
 */
export const STORE: LocalActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds' },
};

/** Confirm and Cancel: the spec's 10 seconds, one attempt. */
export const TCC_CALL: LocalActivityOptions = {
  startToCloseTimeout: CONFIRM_CANCEL_TIMEOUT_SECONDS * 1000,
  retry: { maximumAttempts: 1 },
};

/** Try: the HTTP call gives up at the app's TryTimeoutSeconds itself; one second more is the backstop for a stuck worker. */
export const tryCall = (app: { tryTimeoutSeconds: number }): LocalActivityOptions => ({
  startToCloseTimeout: (app.tryTimeoutSeconds + 1) * 1000,
  retry: { maximumAttempts: 1 },
});

/** The Try and Confirm calls as a step of their own: one attempt, limited by tccRoundsSeconds. */
export const tccRounds = (apps: Array<{ tryTimeoutSeconds: number }>): LocalActivityOptions => ({
  startToCloseTimeout: tccRoundsSeconds(apps) * 1000,
  retry: { maximumAttempts: 1 },
});

/**
 * An attempt's first step (createUserAndCallApps, loadUserAndCallApps): the user, its apps, and, when the calls' own
 * timeouts (tccRoundsSeconds) fit in what is left of this limit, the Try and Confirm calls and the records of the apps
 * that confirmed. Retried like a store write; once a call is sent the step ends within this limit on its own (records
 * it cannot write in time are left to recordAndFinish), so only a stuck worker meets the backstop, and a run again,
 * like a replay, sends the same calls with the same transactionId. Five minutes hold four apps at the default Try
 * timeout; more, or slower, apps get the calls as a step of their own (tccRounds).
 */
export const FIRST_STEP: LocalActivityOptions = { ...STORE, startToCloseTimeout: '5 minutes' };

/**
 * Best-effort calls after the caller has its answer (a Cancel that failed inline, deprovisioning DELETEs):
 * retried with back-off until the app-side pending-record TTL the spec recommends (about one hour) has passed.
 */
export const BACKGROUND: ActivityOptions = {
  startToCloseTimeout: CONFIRM_CANCEL_TIMEOUT_SECONDS * 1000,
  scheduleToCloseTimeout: '1 hour',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '5 minutes' },
};

/**
 * A logout token to a client (back-channel logout): 10 seconds an attempt (the request's own limit, with room), retried
 * with back-off for about forty minutes; the activity counts its last failed attempt as given up.
 */
export const LOGOUT_DELIVERY: ActivityOptions = {
  startToCloseTimeout: '15 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 minutes', maximumAttempts: 16 },
};
