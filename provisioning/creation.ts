import { randomUUID } from 'node:crypto';
import { hashPassword } from '../platform/security/password-hashing';
import {
  dropReservation,
  listReservationsOlderThan,
  releaseEmail,
  reserveEmail,
  takeOverReservation,
} from './store/email-reservations';
import type { Db } from '../platform/store/database';
import { ABANDONED_AFTER_HOURS, discardPasswordHash, stashPasswordHash } from './store/pending-credentials';
import type { NewUser } from '../platform/store/users';
import { provisioningWorkflowId, type Trigger } from './workflows/ids';
import { createUserAndProvision, type CreationOutcome } from './workflows/provisioning';
import { AttemptInProgressError, ResultDeadlineError } from '../platform/temporal/run-errors';
import type { WorkflowRunner } from './workflow-runner';
import { logger } from '../platform/observability/logger';

export interface CreationRequest {
  trigger: Trigger;
  user: Omit<NewUser, 'userId'>;
  password?: string;
  /** The new user's id; an Idempotency-Key derives it, so a repeat lands on the same attempt. Random otherwise. */
  userId?: string;
}

/** A profile as the API takes it, its optional fields absent, as the store's new user. */
export function newUserFrom(profile: {
  email: string;
  firstName?: string | null;
  lastName?: string | null;
  organizationId?: string | null;
  customAttributes?: Record<string, string>;
  emailConfirmed?: boolean;
}): Omit<NewUser, 'userId'> {
  return {
    email: profile.email,
    ...(profile.emailConfirmed && { emailConfirmed: true }),
    firstName: profile.firstName ?? null,
    lastName: profile.lastName ?? null,
    organizationId: profile.organizationId ?? null,
    customAttributes: profile.customAttributes ?? {},
  };
}

/** A reservation whose workflow is not (yet) to be found is left alone this long: its API may be about to start it. */
const RESERVATION_GRACE_MS = 30_000;

/** One creation attempt per e-mail at a time: the reservation, or 409 naming the attempt that holds it. */
async function reserve(db: Db, run: WorkflowRunner, email: string, workflowId: string): Promise<void> {
  for (;;) {
    const reservation = await reserveEmail(db, email, workflowId);
    if (reservation.reserved || reservation.holder === workflowId) return;
    const young = Date.now() - reservation.since.getTime() < RESERVATION_GRACE_MS;
    if (young || (await run.isRunning(reservation.holder))) throw new AttemptInProgressError(reservation.holder);
    if (await takeOverReservation(db, email, reservation.holder, workflowId)) return;
  }
}

/** How many old reservations one purge looks at; the next hour's purge takes the rest. */
const PURGE_BATCH = 500;

/**
 * Clears the reservations whose attempt has ended, or never started, past the grace: an API that died between taking
 * a reservation and releasing it would otherwise keep an e-mail address in the store for ever (another attempt for
 * the same address takes it over, but most addresses are never submitted again). How many went.
 */
export async function purgeDeadReservations(db: Db, run: Pick<WorkflowRunner, 'isRunning'>): Promise<number> {
  let purged = 0;
  for (const row of await listReservationsOlderThan(db, RESERVATION_GRACE_MS / 1000, PURGE_BATCH)) {
    if (await run.isRunning(row.workflow_id)) continue;
    if (await dropReservation(db, row.normalized_email, row.workflow_id)) purged++;
  }
  return purged;
}

/**
 * Every creation path goes through here: the e-mail is reserved for this attempt, the password is hashed in the API
 * and handed over through the store (so neither it nor its hash enters workflow history), then the creation workflow
 * runs and is waited for. A repeat with the same user id attaches to that attempt, or gets its result when it ended.
 */
export async function createUserThroughWorkflow(
  { db, run }: { db: Db; run: WorkflowRunner },
  request: CreationRequest,
): Promise<CreationOutcome> {
  const userId = request.userId ?? randomUUID();
  const workflowId = provisioningWorkflowId(userId);
  await reserve(db, run, request.user.email, workflowId);
  let credentialRef: string | undefined;
  let stillRunning = false;
  try {
    credentialRef =
      request.password === undefined ? undefined : await stashPasswordHash(db, await hashPassword(request.password));
    return await run(createUserAndProvision, {
      workflowId,
      onEnded: 'result',
      args: [{ trigger: request.trigger, credentialRef, user: { ...request.user, userId } }],
      search: { userId, trigger: request.trigger },
    });
  } catch (error) {
    stillRunning = error instanceof ResultDeadlineError;
    throw error;
  } finally {
    // Past the deadline the workflow may still need both. Otherwise the attempt has ended: the stashed hash is no
    // longer read (an attempt that kept no user leaves it here; one that attached to an earlier attempt never had it
    // read), and the e-mail is free again. The answer is already decided, so a failed clean-up is a warning.
    if (!stillRunning) {
      // Awaited before the answer goes out: a request that follows the answer must meet the user (409 naming it),
      // not a reservation still held by an attempt that has ended. The pool does not hand out its connections first
      // come first served while it has idle ones, so a release queued behind the answer could come too late.
      await (async () => {
        if (credentialRef) await discardPasswordHash(db, credentialRef);
        await releaseEmail(db, request.user.email, workflowId);
      })().catch((error: unknown) => cleanUpFailed(workflowId, error));
    }
  }
}

/** What is left is cleared later: the reservation is taken over after its grace, the hash purged as abandoned. */
function cleanUpFailed(workflowId: string, error: unknown): void {
  logger.warn(
    `creation: clearing the e-mail reservation and stashed password hash of ${workflowId} failed ` +
      `(${(error as Error).message}); another attempt for that e-mail takes the reservation over after ` +
      `${RESERVATION_GRACE_MS / 1000} s, and a stashed hash is purged after ${ABANDONED_AFTER_HOURS} h`,
  );
}
