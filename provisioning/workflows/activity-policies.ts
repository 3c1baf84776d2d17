import type { ActivityOptions, LocalActivityOptions } from '@temporalio/workflow';
import { CONFIRM_CANCEL_TIMEOUT_SECONDS } from '../tcc';

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

/**
 * A Confirm or a Cancel of one app: the spec's 10 seconds, one attempt. The HTTP call gives up at the same 10 seconds
 * itself; whichever ends first, the answer reads "timed out".
 */
export const TCC_CALL: LocalActivityOptions = {
  startToCloseTimeout: CONFIRM_CANCEL_TIMEOUT_SECONDS * 1000,
  retry: { maximumAttempts: 1 },
};

/** A Try of one app: the HTTP call gives up at the app's TryTimeoutSeconds itself; one second more is the backstop for a stuck worker. */
export const tryCall = (app: { tryTimeoutSeconds: number }): LocalActivityOptions => ({
  startToCloseTimeout: (app.tryTimeoutSeconds + 1) * 1000,
  retry: { maximumAttempts: 1 },
});

/**
 * A call's options with the app it goes to as its summary, which the Temporal UI shows on the call's event (and which
 * is sealed like every payload): an operator reads which app was asked, approved, refused or cancelled, and when.
 */
export const toApp = (options: LocalActivityOptions, phase: 'Try' | 'Confirm' | 'Cancel', appId: string) => ({
  ...options,
  summary: `${phase} ${appId}`,
});

/**
 * Best-effort calls after the caller has its answer (a Cancel that failed inline, deprovisioning DELETEs):
 * retried with back-off until the app-side pending-record TTL the spec recommends (about one hour) has passed.
 */
export const BACKGROUND: ActivityOptions = {
  startToCloseTimeout: CONFIRM_CANCEL_TIMEOUT_SECONDS * 1000,
  scheduleToCloseTimeout: '1 hour',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumInterval: '5 minutes' },
};
