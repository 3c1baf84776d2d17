import { ApplicationFailure, Context, log } from '@temporalio/activity';
import { deprovisioningRetries } from '../../platform/observability/metrics';
import type { Db } from '../../platform/store/database';
import { discardPasswordHash, readPasswordHash } from '../store/pending-credentials';
import { activateUser, deactivateUserReturningApps } from '../../platform/store/user-removals';
import { listProvisionedApps, recordProvisions } from '../../platform/store/provisions';
import {
  deleteUserReturningApps,
  DuplicateUserError,
  findUser,
  findUserIdByEmailOrUserName,
  insertUser,
  updateUserAttributes,
  type NewUser,
  type UserProfile,
} from '../../platform/store/users';
import type { AppRef } from '../store/provisioning-apps';
import type { SignOutNotice } from '../../platform/store/schema';
import type { Removal } from '../../platform/store/user-removals';
import type { AppProvider, ProvisioningApp } from '../apps/apps';
import type { TccClient, TryRequestBody } from '../apps/tcc-client';
import type { Assigned, FinishResult, TryVerdict } from '../tcc';

export interface ProvisioningDependencies {
  db: Db;
  http: TccClient;
  apps: AppProvider;
}

export type { AppRef };

/** A duplicate names the user that holds the e-mail or user name; the API decides who may learn that id. */
export type CreateUserResult =
  { status: 'created'; user: UserProfile } | { status: 'duplicate'; detail: string; existingUserId?: string };

/** The apps an attempt must provision (in the provider's order), the ones asked for that do not exist, and the ones the user has. */
export interface ResolvedApps {
  apps: AppRef[];
  unknownAppIds: string[];
  provisionedApps: string[];
}

/** What writing the records of the apps that confirmed gave: false when the user was deleted while the attempt ran. */
export type { FinishResult };

/** What an attempt's first step found: the user and its apps. The calls are steps of their own, one per app. */
export type FirstStep = { user: UserProfile } & ResolvedApps;

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

  async function tryOne(found: ProvisioningApp, transactionId: string, user: UserProfile): Promise<TryVerdict> {
    const verdict = await http.try(found, buildTryBody(transactionId, user));
    if (!verdict.approved) log.info('Try not approved', { appId: found.appId, transactionId, reason: verdict.reason });
    return verdict;
  }

  /**
   * The apps this attempt must provision, in the provider's order, minus those the user already has (`provisioned`,
   * when the caller knows them: a user created this moment has none).
   */
  async function resolve(user: UserProfile, appIds?: string[], provisioned?: string[]): Promise<ResolvedApps> {
    const configured = await apps.listApps({ userId: user.userId, organizationId: user.organizationId });
    const wanted = appIds ?? configured.map((a) => a.appId);
    const unknownAppIds = wanted.filter((id) => !configured.some((a) => a.appId === id));
    const provisionedApps = provisioned ?? (await listProvisionedApps(db, user.userId));
    const needed = configured
      .filter((a) => wanted.includes(a.appId) && !provisionedApps.includes(a.appId))
      .map((a) => ({ appId: a.appId, tryTimeoutSeconds: a.tryTimeoutSeconds }));
    return { apps: needed, unknownAppIds, provisionedApps };
  }

  /**
   * Safe to run twice: the user id is the attempt's own, so a second run (a retry, or the replay of a workflow task
   * lost with its worker) meets its own row and returns it (`inserted` false). The stashed hash is only read here; the
   * workflow removes it as its last step, so a replay that no longer finds it finds the user instead.
   */
  async function insertOrFind(input: {
    user: NewUser;
    credentialRef?: string;
  }): Promise<CreateUserResult & { inserted?: boolean }> {
    const hash = input.credentialRef ? await readPasswordHash(db, input.credentialRef) : undefined;
    if (input.credentialRef && hash === undefined) {
      const existing = await findUser(db, input.user.userId);
      if (existing) return { status: 'created', user: existing };
      throw ApplicationFailure.nonRetryable(
        'the password for this request is no longer available; submit the request again',
        'CredentialExpired',
      );
    }
    try {
      return { status: 'created', user: await insertUser(db, input.user, hash ?? null), inserted: true };
    } catch (error) {
      if (!(error instanceof DuplicateUserError)) throw error;
      const existing = await findUser(db, input.user.userId);
      if (existing) return { status: 'created', user: existing };
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
  }

  /** The user created (insertOrFind) and the apps it needs: how every creation's first step begins. */
  async function createdWithApps(input: {
    user: NewUser;
    credentialRef?: string;
    appIds?: string[];
  }): Promise<
    ({ status: 'created'; user: UserProfile } & ResolvedApps) | Extract<CreateUserResult, { status: 'duplicate' }>
  > {
    const { inserted, ...created } = await insertOrFind(input);
    if (created.status === 'duplicate') return created;
    return { ...created, ...(await resolve(created.user, input.appIds, inserted ? [] : undefined)) };
  }

  /** The user as stored and the apps it needs, null when gone: how an attempt for an existing user begins. */
  async function loadedWithApps(input: {
    userId: string;
    appIds?: string[];
  }): Promise<({ user: UserProfile } & ResolvedApps) | null> {
    const user = await findUser(db, input.userId);
    return user ? { user, ...(await resolve(user, input.appIds)) } : null;
  }

  /** What the records of an attempt are made of: the apps that confirmed and what they assigned. */
  type RecordInput = { user: UserProfile; transactionId: string; confirmedApps: string[]; assigned?: Assigned };

  /**
   * A provision record for every app that confirmed (first, so an app that confirmed is always recorded), then what
   * they assigned. Idempotent, like each write in it; `recorded: false` when the user is gone.
   */
  async function record(input: RecordInput): Promise<FinishResult> {
    const { user, transactionId, confirmedApps, assigned } = input;
    const provisionedApps = await recordProvisions(db, { userId: user.userId, transactionId, appIds: confirmedApps });
    if (!provisionedApps) return { recorded: false };
    const stored = assigned && (await updateUserAttributes(db, user.userId, assigned));
    return { recorded: true, user: stored || user, provisionedApps };
  }

  return {
    async discardCredential(credentialRef: string): Promise<void> {
      await discardPasswordHash(db, credentialRef);
    },

    /**
     * Try of one app, a step of its own: the user as the approvals before it left it. A refusal, a timeout or an answer
     * the service cannot take is a verdict, not a fault. Run twice (a replay), it sends the same transactionId.
     */
    async tryApp(input: { appId: string; transactionId: string; user: UserProfile }): Promise<TryVerdict> {
      return tryOne(await app(input.appId), input.transactionId, input.user);
    },

    /** Confirm of one app, a step of its own; a failure (the app's answer, a timeout) fails the step with its words. */
    async confirmApp(input: { appId: string; transactionId: string }): Promise<void> {
      await http.confirm(await app(input.appId), input.transactionId);
    },

    async cancelApp(input: { appId: string; transactionId: string }): Promise<void> {
      await http.cancel(await app(input.appId), input.transactionId);
    },

    /**
     * A creation's first step: the user (safe to run twice, see insertOrFind) and the apps it needs. Run again, it
     * finds the records its first run's attempt wrote: the user then needs no app.
     */
    async createUserWithApps(input: {
      user: NewUser;
      credentialRef?: string;
      appIds?: string[];
    }): Promise<({ status: 'created' } & FirstStep) | Extract<CreateUserResult, { status: 'duplicate' }>> {
      return createdWithApps(input);
    },

    /** The first step of an attempt for an existing user: the user as stored and the apps it needs; null when gone. */
    async loadUserWithApps(input: { userId: string; appIds?: string[] }): Promise<FirstStep | null> {
      return loadedWithApps(input);
    },

    /** The records of the apps that confirmed, retried until it lands: an app that confirmed is always recorded. */
    async recordAndFinish(input: RecordInput): Promise<FinishResult> {
      return record(input);
    },

    /**
     * Deletes the user and its provision records. With a `removalId` (the removing workflow run's key) a second run
     * answers what the first found, so the replay after a lost worker still tells the apps. A refused creation passes
     * none: its replay creates the user again, and that user must go too.
     */
    async deleteUser(
      userId: string,
      removalId?: string,
    ): Promise<{ deleted: boolean; appIds: string[]; signOuts: SignOutNotice[] }> {
      return deleteUserReturningApps(db, userId, removalId);
    },

    /** The SCIM soft-delete; `removalId` as for deleteUser. */
    async deactivateUser(userId: string, removalId?: string): Promise<Removal> {
      return deactivateUserReturningApps(db, userId, removalId);
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
