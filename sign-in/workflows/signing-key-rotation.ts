import { continueAsNew, proxyActivities, sleep } from '@temporalio/workflow';
import type { SigningKeyRotationActivities } from '../activities/signing-key-rotation';

/** A store write under a lock: short, safe to repeat, retried until it lands. */
const { rotateSigningKeys } = proxyActivities<SigningKeyRotationActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/** Never wake more often than this (a due moment just past), nor sleep longer (settings or the store may change). */
export const ROTATION_WAKE_BOUNDS_MS = { min: 1000, max: 3600_000 };
/** Steps per run before the history is started afresh (continue-as-new): a run's history stays a few hundred events. */
export const ROTATION_STEPS_PER_RUN = 100;

/**
 * Signing-key rotation for the whole cluster: one workflow per task queue (its id, signingKeyRotationWorkflowId), so
 * it runs once however many instances start it. Each step makes a key when one is due and deletes retired ones
 * (rotateSigningKeys), then the workflow sleeps until the next step has work, at most an hour.
 */
export async function signingKeyRotation(): Promise<void> {
  for (let step = 0; step < ROTATION_STEPS_PER_RUN; step++) {
    const { nextInMs } = await rotateSigningKeys();
    await sleep(Math.min(Math.max(nextInMs, ROTATION_WAKE_BOUNDS_MS.min), ROTATION_WAKE_BOUNDS_MS.max));
  }
  await continueAsNew<typeof signingKeyRotation>();
}
