import { discardPasswordHash } from '../store/pending-credentials';
import type { Db } from '../../platform/store/database';
import { activateUser, deactivateUserReturningApps } from '../../platform/store/user-removals';
import { deleteUserReturningApps, type NewUser, type UserProfile } from '../../platform/store/users';
import type { AppRef } from '../store/provisioning-apps';
import type { SignOutNotice } from '../../platform/store/schema';
import type { Removal } from '../../platform/store/user-removals';
import type { AppProvider } from '../apps/app-providers';
import type { TccClient } from '../apps/tcc-client';
import type { FinishResult, TryVerdict } from '../tcc';
import { cancelApp, confirmApp, deprovisionApp, tryApp } from './steps/app-calls';
import { createUserWithApps, loadUserWithApps, type DuplicateUser, type FirstStep } from './steps/first-step';
import { recordAndFinish, type RecordInput } from './steps/records';

export interface ProvisioningDependencies {
  db: Db;
  http: TccClient;
  apps: AppProvider;
}

export type { AppRef };
export type { FirstStep } from './steps/first-step';
export { buildTryBody } from './steps/app-calls';

/** What writing the records of the apps that confirmed gave: false when the user was deleted while the attempt ran. */
export type { FinishResult };

/** The activities of a provisioning attempt; each is one step in ./steps, named here as the workflows call it. */
export function createProvisioningActivities(deps: ProvisioningDependencies) {
  const { db } = deps;
  return {
    async discardCredential(credentialRef: string): Promise<void> {
      await discardPasswordHash(db, credentialRef);
    },

    /**
     * Try of one app, a step of its own: the user as the approvals before it left it. A refusal, a timeout or an answer
     * the service cannot take is a verdict, not a fault. Run twice (a replay), it sends the same transactionId.
     */
    async tryApp(input: { appId: string; transactionId: string; user: UserProfile }): Promise<TryVerdict> {
      return tryApp(deps, input);
    },

    /** Confirm of one app, a step of its own; a failure (the app's answer, a timeout) fails the step with its words. */
    async confirmApp(input: { appId: string; transactionId: string }): Promise<void> {
      await confirmApp(deps, input);
    },

    async cancelApp(input: { appId: string; transactionId: string }): Promise<void> {
      await cancelApp(deps, input);
    },

    async createUserWithApps(input: {
      user: NewUser;
      credentialRef?: string;
      appIds?: string[];
    }): Promise<({ status: 'created' } & FirstStep) | DuplicateUser> {
      return createUserWithApps(deps, input);
    },

    async loadUserWithApps(input: { userId: string; appIds?: string[] }): Promise<FirstStep | null> {
      return loadUserWithApps(deps, input);
    },

    /** The records of the apps that confirmed, retried until it lands: an app that confirmed is always recorded. */
    async recordAndFinish(input: RecordInput): Promise<FinishResult> {
      return recordAndFinish(db, input);
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
      await deprovisionApp(deps, input);
    },
  };
}

export type ProvisioningActivities = ReturnType<typeof createProvisioningActivities>;
