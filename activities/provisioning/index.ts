import { ApplicationFailure, Context, log } from '@temporalio/activity';
import { deprovisioningRetries } from '../../observability/metrics';
import type { Db } from '../../store/database';
import { discardPasswordHash, readPasswordHash } from '../../store/pending-credentials';
import { activateUser, deactivateUserReturningApps } from '../../store/scim-users';
import { listProvisionedApps, recordProvision } from '../../store/provisions';
import {
  deleteUserReturningApps,
  DuplicateUserError,
  findUser,
  findUserIdByEmailOrUserName,
  insertUser,
  updateUserAttributes,
  type NewUser,
  type UserProfile,
} from '../../store/users';
import type { AppRef } from '../../store/provisioning-apps';
import type { AppProvider, ProvisioningApp } from './apps';
import type { TccClient, TryRequestBody, TryVerdict } from './tcc-client';

export interface ProvisioningDependencies {
  db: Db;
  http: TccClient;
  apps: AppProvider;
}

export type { AppRef };

/** A duplicate names the user that holds the e-mail or user name; the API decides who may learn that id. */
export type CreateUserResult =
  { status: 'created'; user: UserProfile } | { status: 'duplicate'; detail: string; existingUserId?: string };

/** Omits nulls and an empty attribute map, as the spec's Try body table asks. */
export function buildTryBody(transactionId: string, user: UserProfile): TryRequestBody {
  const body: TryRequestBody = { transactionId, userId: user.userId, email: user.email };
  if (user.firstName != null) body.firstName = user.firstName;
  if (user.lastName != null) body.lastName = user.lastName;
  if (user.organizationId != null) body.organizationId = user.organizationId;
  if (Object.keys(user.customAttributes).length > 0) body.customAttributes = user.customAttributes;
  return body;
}

export function createProvisioningActivities({ db, http, apps }: ProvisioningDependencies) {
  async function app(appId: string): Promise<ProvisioningApp> {
    const found = await apps.getApp(appId);
    if (!found) throw ApplicationFailure.nonRetryable(`provisioning app ${appId} is not configured`, 'UnknownApp');
    return found;
  }

  return {
    /**
     * Safe to run twice: the user id is the attempt's own, so a second run (a retry, or the replay of a workflow task
     * lost with its worker) finds the user the first one created and returns it. The stashed hash is only read here;
     * the workflow removes it as its last step.
     */
    async createUser(input: { user: NewUser; credentialRef?: string }): Promise<CreateUserResult> {
      const existing = await findUser(db, input.user.userId);
      if (existing) return { status: 'created', user: existing };
      const hash = input.credentialRef ? await readPasswordHash(db, input.credentialRef) : undefined;
      if (input.credentialRef && hash === undefined) {
        throw ApplicationFailure.nonRetryable(
          'the password for this request is no longer available; submit the request again',
          'CredentialExpired',
        );
      }
      try {
        return { status: 'created', user: await insertUser(db, input.user, hash ?? null) };
      } catch (error) {
        if (!(error instanceof DuplicateUserError)) throw error;
        const raced = await findUser(db, input.user.userId);
        if (raced) return { status: 'created', user: raced };
        const existingUserId = await findUserIdByEmailOrUserName(
          db,
          input.user.email,
          input.user.userName ?? input.user.email,
        );
        return {
          status: 'duplicate',
          detail: `a user with e-mail ${input.user.email}${input.user.userName ? ` or user name ${input.user.userName}` : ''} already exists`,
          ...(existingUserId ? { existingUserId } : {}),
        };
      }
    },

    async discardCredential(credentialRef: string): Promise<void> {
      await discardPasswordHash(db, credentialRef);
    },

    async loadUser(userId: string): Promise<UserProfile | null> {
      return (await findUser(db, userId)) ?? null;
    },

    /** The apps this attempt must provision, in the provider's order, minus those the user already has. */
    async resolveApps(input: {
      user: UserProfile;
      appIds?: string[];
    }): Promise<{ apps: AppRef[]; unknownAppIds: string[] }> {
      const configured = await apps.listApps({ userId: input.user.userId, organizationId: input.user.organizationId });
      const wanted = input.appIds ?? configured.map((a) => a.appId);
      const unknownAppIds = wanted.filter((id) => !configured.some((a) => a.appId === id));
      const already = new Set(await listProvisionedApps(db, input.user.userId));
      const needed = configured
        .filter((a) => wanted.includes(a.appId) && !already.has(a.appId))
        .map((a) => ({ appId: a.appId, tryTimeoutSeconds: a.tryTimeoutSeconds }));
      return { apps: needed, unknownAppIds };
    },

    async tryApp(input: { appId: string; transactionId: string; user: UserProfile }): Promise<TryVerdict> {
      const verdict = await http.try(await app(input.appId), buildTryBody(input.transactionId, input.user));
      if (!verdict.approved)
        log.info('Try not approved', {
          appId: input.appId,
          transactionId: input.transactionId,
          reason: verdict.reason,
        });
      return verdict;
    },

    /** The Confirm call alone; the workflow records the provision as its own step once the app confirmed. */
    async confirmApp(input: { appId: string; transactionId: string; userId: string }): Promise<void> {
      await http.confirm(await app(input.appId), input.transactionId);
    },

    /** Idempotent: the record exists once per user and app, whatever number of times this runs. False when the user is gone. */
    async recordProvision(input: { appId: string; userId: string; transactionId: string }): Promise<boolean> {
      return recordProvision(db, input);
    },

    async cancelApp(input: { appId: string; transactionId: string }): Promise<void> {
      await http.cancel(await app(input.appId), input.transactionId);
    },

    /** Ends an attempt: stores what confirmed apps assigned (when anything changed) and reports where the user is provisioned. */
    async finishProvisioning(input: {
      user: UserProfile;
      assigned?: { organizationId: string | null; customAttributes: Record<string, string> };
    }): Promise<{ user: UserProfile; provisionedApps: string[] }> {
      const user =
        (input.assigned && (await updateUserAttributes(db, input.user.userId, input.assigned))) || input.user;
      return { user, provisionedApps: await listProvisionedApps(db, input.user.userId) };
    },

    async deleteUser(userId: string): Promise<{ deleted: boolean; appIds: string[] }> {
      return deleteUserReturningApps(db, userId);
    },

    async deactivateUser(userId: string): Promise<{ found: boolean; appIds: string[] }> {
      return deactivateUserReturningApps(db, userId);
    },

    async activateUser(userId: string): Promise<void> {
      await activateUser(db, userId);
    },

    async deprovisionApp(input: { appId: string; userId: string }): Promise<void> {
      if (Context.current().info.attempt > 1) deprovisioningRetries.inc({ app: input.appId });
      await http.deleteUser(await app(input.appId), input.userId);
    },
  };
}

export type ProvisioningActivities = ReturnType<typeof createProvisioningActivities>;
