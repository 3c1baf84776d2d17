import { ApplicationFailure } from '@temporalio/activity';
import type { Db } from '../../../platform/store/database';
import { listProvisionedApps } from '../../../platform/store/provisions';
import {
  DuplicateUserError,
  findUser,
  findUserIdByEmailOrUserName,
  insertUser,
  type NewUser,
  type UserProfile,
} from '../../../platform/store/users';
import { readPasswordHash } from '../../store/pending-credentials';
import type { AppRef } from '../../store/provisioning-apps';
import type { AppProvider } from '../../apps/app-providers';

/** What an attempt's first step reads and writes: the store and the provider that knows the apps. */
export interface FirstStepDependencies {
  db: Db;
  apps: AppProvider;
}

/** A duplicate names the user that holds the e-mail or user name; the API decides who may learn that id. */
export type CreateUserResult =
  { status: 'created'; user: UserProfile } | { status: 'duplicate'; detail: string; existingUserId?: string };

/** The apps an attempt must provision (in the provider's order), the ones asked for that do not exist, and the ones the user has. */
export interface ResolvedApps {
  apps: AppRef[];
  unknownAppIds: string[];
  provisionedApps: string[];
}

/** What an attempt's first step found: the user and its apps. The calls are steps of their own, one per app. */
export type FirstStep = { user: UserProfile } & ResolvedApps;

export type DuplicateUser = Extract<CreateUserResult, { status: 'duplicate' }>;

/**
 * The apps this attempt must provision, in the provider's order, minus those the user already has (`provisioned`,
 * when the caller knows them: a user created this moment has none).
 */
async function resolveApps(
  { db, apps }: FirstStepDependencies,
  user: UserProfile,
  appIds?: string[],
  provisioned?: string[],
): Promise<ResolvedApps> {
  const configured = await apps.listApps({ userId: user.userId, organizationId: user.organizationId });
  const wanted = appIds ?? configured.map((a) => a.appId);
  const unknownAppIds = wanted.filter((id) => !configured.some((a) => a.appId === id));
  const provisionedApps = provisioned ?? (await listProvisionedApps(db, user.userId));
  const needed = configured
    .filter((a) => wanted.includes(a.appId) && !provisionedApps.includes(a.appId))
    .map((a) => ({ appId: a.appId, tryTimeoutSeconds: a.tryTimeoutSeconds }));
  return { apps: needed, unknownAppIds, provisionedApps };
}

/** The user that already holds the e-mail or user name, or this attempt's own row when a first run inserted it. */
async function duplicateOrOwn(db: Db, user: NewUser): Promise<CreateUserResult> {
  const existing = await findUser(db, user.userId);
  if (existing) return { status: 'created', user: existing };
  const existingUserId = await findUserIdByEmailOrUserName(db, user.email, user.userName ?? user.email);
  return {
    status: 'duplicate',
    detail: `a user with e-mail ${user.email}${user.userName ? ` or user name ${user.userName}` : ''} already exists`,
    ...(existingUserId ? { existingUserId } : {}),
  };
}

/**
 * Safe to run twice: the user id is the attempt's own, so a second run (a retry, or the replay of a workflow task
 * lost with its worker) meets its own row and returns it (`inserted` false). The stashed hash is only read here; the
 * workflow removes it as its last step, so a replay that no longer finds it finds the user instead.
 */
async function insertOrFind(
  db: Db,
  input: { user: NewUser; credentialRef?: string },
): Promise<CreateUserResult & { inserted?: boolean }> {
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
    return duplicateOrOwn(db, input.user);
  }
}

/**
 * A creation's first step: the user (safe to run twice, see insertOrFind) and the apps it needs. Run again, it finds
 * the records its first run's attempt wrote: the user then needs no app.
 */
export async function createUserWithApps(
  deps: FirstStepDependencies,
  input: { user: NewUser; credentialRef?: string; appIds?: string[] },
): Promise<({ status: 'created' } & FirstStep) | DuplicateUser> {
  const { inserted, ...created } = await insertOrFind(deps.db, input);
  if (created.status === 'duplicate') return created;
  return { ...created, ...(await resolveApps(deps, created.user, input.appIds, inserted ? [] : undefined)) };
}

/** The first step of an attempt for an existing user: the user as stored and the apps it needs; null when gone. */
export async function loadUserWithApps(
  deps: FirstStepDependencies,
  input: { userId: string; appIds?: string[] },
): Promise<FirstStep | null> {
  const user = await findUser(deps.db, input.userId);
  return user ? { user, ...(await resolveApps(deps, user, input.appIds)) } : null;
}
