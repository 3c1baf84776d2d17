import { log, patched, proxyLocalActivities } from '@temporalio/workflow';
import type { AppRef, ProvisioningActivities } from '../../activities/provisioning';
import type { NewUser, UserProfile } from '../../store/users';
import { applyApproval, assignedChanges, type Approval } from '../approval';
import { STORE, TCC_CALL, tryCall } from '../activity-policies';
import { deprovisionInBackground } from '../background';
import { deleteRefusedUser } from '../refused-creation';
import type { CreationOutcome, ProvisioningOutcome, ProvisionScope } from '../provisioning';
import { cancel, failureReason, type Ending, type TransactionResult } from '../transaction';

/**
 * Attempts as runs started before TCC_ROUNDS recorded them: one workflow step per app and call, the provision
 * records one step each. A run of that build still in flight when this one rolls out replays this code; once none is
 * open (an attempt lasts minutes at most: `temporal workflow list --query 'ExecutionStatus="Running"'`), the
 * provisioning workflows can deprecate the patch and this module goes, with the activities only it calls (createUser,
 * loadUser, resolveApps, tryApp, confirmApp, recordProvision, finishProvisioning) and the policy tryCall.
 */
export const TCC_ROUNDS = 'tcc-rounds-in-one-step';

const store = proxyLocalActivities<ProvisioningActivities>(STORE);
const tccCalls = proxyLocalActivities<ProvisioningActivities>(TCC_CALL);

async function provision(
  user: UserProfile,
  scope: ProvisionScope,
  transactionId: string,
): Promise<ProvisioningOutcome> {
  const { apps, unknownAppIds } = await store.resolveApps({ user, appIds: scope.appIds });
  if (unknownAppIds.length > 0) return { status: 'unknown-apps', appIds: unknownAppIds, user };
  if (apps.length > 0) return runTransaction(apps, transactionId, user);
  return { status: 'provisioned', confirmedApps: [], ...(await store.finishProvisioning({ user })) };
}

export async function createAndProvision(
  input: ProvisionScope & { user: NewUser; credentialRef?: string },
  transactionId: string,
): Promise<CreationOutcome> {
  try {
    const created = await store.createUser({ user: input.user, credentialRef: input.credentialRef });
    if (created.status === 'duplicate') return created;
    // The apps it needed are not at hand here: a kept user's answer names none of them as unconfirmed.
    return deleteRefusedUser({ apps: [] }, await provision(created.user, input, transactionId));
  } finally {
    if (input.credentialRef && patched('discard-credential-last')) await store.discardCredential(input.credentialRef);
  }
}

export async function provisionLoadedUser(
  input: ProvisionScope & { userId: string },
  transactionId: string,
): Promise<ProvisioningOutcome> {
  const user = await store.loadUser(input.userId);
  if (!user) return { status: 'not-found', userId: input.userId };
  return provision(user, input, transactionId);
}

async function tryApp(app: AppRef, transactionId: string, user: UserProfile) {
  const { tryApp } = proxyLocalActivities<ProvisioningActivities>(tryCall(app));
  try {
    return await tryApp({ appId: app.appId, transactionId, user });
  } catch (error) {
    return { approved: false as const, reason: `Try to app ${app.appId} ${failureReason(error)}` };
  }
}

async function runTransaction(
  apps: AppRef[],
  transactionId: string,
  initialUser: UserProfile,
): Promise<TransactionResult> {
  const { ending, confirmedUser } = await tryThenConfirm(apps, transactionId, initialUser);
  const { user, provisionedApps } = await store.finishProvisioning({
    user: initialUser,
    assigned: assignedChanges(initialUser, confirmedUser),
  });
  return { ...ending, user, provisionedApps };
}

async function tryThenConfirm(
  apps: AppRef[],
  transactionId: string,
  initialUser: UserProfile,
): Promise<{ ending: Ending; confirmedUser: UserProfile }> {
  let user = initialUser;
  const approvals: Approval[] = [];
  for (const app of apps) {
    const verdict = await tryApp(app, transactionId, user);
    if (!verdict.approved) {
      await cancel(
        approvals.map((a) => a.appId),
        transactionId,
      );
      return { ending: { status: 'rejected', appId: app.appId, reason: verdict.reason }, confirmedUser: initialUser };
    }
    const approval = {
      appId: app.appId,
      organizationId: verdict.organizationId,
      customAttributes: verdict.customAttributes,
    };
    approvals.push(approval);
    user = applyApproval(user, approval);
  }

  // Runs recorded before the Confirm call and the provision record were apart made both in one step.
  let confirmedUser = initialUser;
  const confirmed: string[] = [];
  for (const [index, approval] of approvals.entries()) {
    const recordApart = patched('confirm-then-record');
    try {
      await tccCalls.confirmApp({ appId: approval.appId, transactionId, userId: initialUser.userId });
    } catch (error) {
      const reason = `Confirm to app ${approval.appId} ${failureReason(error)}`;
      const unconfirmed = approvals.slice(index).map((a) => a.appId);
      await cancel(unconfirmed, transactionId);
      const ending: Ending =
        confirmed.length === 0
          ? { status: 'rejected', appId: approval.appId, reason }
          : {
              status: 'partially-confirmed',
              appId: approval.appId,
              reason,
              confirmedApps: confirmed,
              unconfirmedApps: unconfirmed,
            };
      return { ending, confirmedUser };
    }
    if (
      recordApart &&
      !(await store.recordProvision({ appId: approval.appId, userId: initialUser.userId, transactionId }))
    ) {
      log.warn('User deleted during provisioning', { appId: approval.appId, transactionId });
      await deprovisionInBackground(initialUser.userId, [approval.appId]);
      await cancel(
        approvals.slice(index + 1).map((a) => a.appId),
        transactionId,
      );
      return {
        ending: {
          status: 'rejected',
          appId: approval.appId,
          reason: 'the user was deleted while it was being provisioned',
        },
        confirmedUser: initialUser,
      };
    }
    confirmed.push(approval.appId);
    confirmedUser = applyApproval(confirmedUser, approval);
  }
  return { ending: { status: 'provisioned', confirmedApps: confirmed }, confirmedUser };
}
