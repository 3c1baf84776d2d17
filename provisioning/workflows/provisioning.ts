import { proxyLocalActivities, workflowInfo } from '@temporalio/workflow';
import type { FirstStep, ProvisioningActivities } from '../activities/provisioning-activities';
import type { NewUser } from '../../platform/store/users';
import { STORE } from './activity-policies';
import { deprovisionInBackground, signOutInBackground } from './background';
import type { Trigger } from './ids';
import { deleteRefusedUser } from './refused-creation';
import { recordOutcome } from '../../platform/temporal/search-attributes';
import { runTransaction } from './transaction';
import type { CreationOutcome, ProvisioningOutcome } from './outcomes';

export type { CreationOutcome, ProvisioningOutcome };

// Store steps, each retried until it lands (STORE): named for that, not for the store module they call.
const untilLanded = proxyLocalActivities<ProvisioningActivities>(STORE);

export interface ProvisionScope {
  trigger: Trigger;
  /** A client's `provisioningApps`; absent means every configured app. */
  appIds?: string[];
}

/**
 * The run's own key. The spec asks only for a string shared by Try, Confirm and Cancel; the run id keeps re-runs of
 * one workflow id apart.
 */
function transactionId(): string {
  const info = workflowInfo();
  return `${info.workflowId}@${info.runId}`;
}

/** The user and the apps it needs come from the attempt's first step; nothing is left to write when none is needed. */
async function provision(first: FirstStep): Promise<ProvisioningOutcome> {
  const { user } = first;
  if (first.unknownAppIds.length > 0) return { status: 'unknown-apps', appIds: first.unknownAppIds, user };
  if (first.apps.length > 0) return runTransaction(first, transactionId());
  return { status: 'provisioned', confirmedApps: [], user, provisionedApps: first.provisionedApps };
}

/** Every user-creation path: create the user, provision it, and delete it again when provisioning is refused. */
export async function createUserAndProvision(
  input: ProvisionScope & { user: NewUser; credentialRef?: string },
): Promise<CreationOutcome> {
  return recorded(await createAndProvision(input));
}

/** An ending, recorded as the ProvisioningOutcome search attribute. */
function recorded<T extends { status: string }>(outcome: T): T {
  recordOutcome(outcome.status);
  return outcome;
}

async function createAndProvision(
  input: ProvisionScope & { user: NewUser; credentialRef?: string },
): Promise<CreationOutcome> {
  let outcome: CreationOutcome | undefined;
  try {
    const created = await untilLanded.createUserWithApps({
      user: input.user,
      credentialRef: input.credentialRef,
      appIds: input.appIds,
    });
    if (created.status === 'duplicate') return (outcome = created);
    return (outcome = await deleteRefusedUser(created, await provision(created)));
  } finally {
    if (input.credentialRef && !noUserHoldsHash(outcome)) await untilLanded.discardCredential(input.credentialRef);
  }
}

/**
 * The stashed hash is read, not taken, by the first step, since a replay runs that step again. Local activities
 * record their results only when the workflow task ends, so a worker lost after the last step replays every step of
 * the attempt: a replay that no longer finds the hash must find the user holding it. So the attempt removes the hash
 * only when the user is kept; after a refusal or a duplicate it is left to the API, which removes it once it has the
 * answer (or to the purge of abandoned credentials, when the API gave up waiting).
 */
/** A refusal deleted the user, a duplicate never created it; a run that failed (no outcome) is not replayed. */
function noUserHoldsHash(outcome: CreationOutcome | undefined): boolean {
  return outcome !== undefined && (outcome.status === 'duplicate' || outcome.userDeleted === true);
}

/** Provisioning for an existing user (retry after a partial confirm, first authorization): the user is never deleted. */
export async function provisionExistingUser(input: ProvisionScope & { userId: string }): Promise<ProvisioningOutcome> {
  return recorded(await provisionLoadedUser(input));
}

async function provisionLoadedUser(input: ProvisionScope & { userId: string }): Promise<ProvisioningOutcome> {
  const loaded = await untilLanded.loadUserWithApps({ userId: input.userId, appIds: input.appIds });
  if (!loaded) return { status: 'not-found', userId: input.userId };
  return provision(loaded);
}

/** SCIM reactivation: provisioning runs while the user is still inactive; only a fully provisioned user becomes active. */
export async function reactivateAndProvision(input: { userId: string }): Promise<ProvisioningOutcome> {
  const outcome = await provisionLoadedUser({ trigger: 'scim', userId: input.userId });
  if (outcome.status !== 'provisioned') return recorded(outcome);
  await untilLanded.activateUser(input.userId);
  return recorded({ ...outcome, user: { ...outcome.user, active: true } });
}

/**
 * The key under which a removal's answer is kept (store/user-removals.ts): the step run again by a replay finds the
 * user gone, and must still answer which apps to tell.
 */
const removalId = transactionId;

/**
 * Who removes a user, and the issuer its sessions' ID tokens named (Api:PublicUrl): the clients of those sessions are
 * told with it (back-channel logout); without one (sign-in off) there are no sessions to tell of.
 */
export interface RemovalInput {
  userId: string;
  issuer?: string;
}

/** Deletion answers as soon as the user is gone; apps and clients are told in the background. */
export async function deleteUserAndDeprovision(input: RemovalInput): Promise<{ deleted: boolean; appIds: string[] }> {
  const { deleted, appIds, signOuts } = await untilLanded.deleteUser(input.userId, removalId());
  if (deleted) {
    await deprovisionInBackground(input.userId, appIds);
    await signOutInBackground(input.issuer, input.userId, signOuts);
  }
  recordOutcome(deleted ? 'deleted' : 'not-found');
  return { deleted, appIds };
}

/** The SCIM soft-delete: the user is kept but inactive, signed out, its provision records gone, and each app told. */
export async function deactivateAndDeprovision(input: RemovalInput): Promise<{ found: boolean; appIds: string[] }> {
  const { found, appIds, signOuts } = await untilLanded.deactivateUser(input.userId, removalId());
  if (found) {
    await deprovisionInBackground(input.userId, appIds);
    await signOutInBackground(input.issuer, input.userId, signOuts);
  }
  recordOutcome(found ? 'deactivated' : 'not-found');
  return { found, appIds };
}
