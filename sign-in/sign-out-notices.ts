import { randomUUID } from 'node:crypto';
import { logoutDeliveries } from '../platform/observability/metrics';
import { logger } from '../platform/observability/logger';
import type { Db } from '../platform/store/database';
import { endEverySignInOf, endSessionOf, type SignOutNotice } from '../platform/store/oidc-payloads';
import { signOutWorkflowId } from '../platform/temporal/sign-out-workflow';
import type { WorkflowRunner } from '../provisioning/workflow-runner';
import { notifySignOut } from './workflows/notify-sign-out';

/** How the sign-in pages, the account pages and the admin API end sign-ins and tell the clients that listen. */
export interface SignOut {
  /** Tells the clients of ended sessions (back-channel logout), by a workflow that retries each delivery. */
  notify(userId: string, notices: SignOutNotice[]): Promise<void>;
  /** Ends every sign-in of the user and tells the clients; answers how many sessions there were. */
  everywhere(userId: string): Promise<number>;
  /** Ends one session of the user (its grants and their tokens) and tells its clients; whether there was one. */
  session(userId: string, sessionId: string): Promise<boolean>;
}

/**
 * The sessions end in the store whatever happens next; when the notices' workflow cannot be started (Temporal
 * unreachable) the clients are not told, which is logged as an error and counted (`not-started`), and the caller's
 * request still succeeds: the user is signed out here either way.
 */
export function createSignOut({ db, run, issuer }: { db: Db; run: WorkflowRunner; issuer: string }): SignOut {
  async function notify(userId: string, notices: SignOutNotice[]): Promise<void> {
    if (notices.length === 0) return;
    try {
      await run.startDetached(notifySignOut, {
        workflowId: signOutWorkflowId(userId, randomUUID()),
        args: [{ issuer, userId, notices }],
        userId,
      });
    } catch (error) {
      for (const { clientId } of notices) logoutDeliveries.inc({ client: clientId, outcome: 'not-started' });
      logger.error(
        `sign-out: the back-channel logout of user ${userId} to ${notices.map((n) => n.clientId).join(', ')} was not started: ${(error as Error).message}`,
      );
    }
  }
  return {
    notify,
    async everywhere(userId) {
      const { sessions, signOuts } = await endEverySignInOf(db, userId);
      await notify(userId, signOuts);
      return sessions;
    },
    async session(userId, sessionId) {
      const { sessions, signOuts } = await endSessionOf(db, userId, sessionId);
      await notify(userId, signOuts);
      return sessions > 0;
    },
  };
}
