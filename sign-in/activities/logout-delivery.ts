import { ApplicationFailure, Context, log } from '@temporalio/activity';
import { logoutDeliveries } from '../../platform/observability/metrics';
import { RefusedAddressError } from '../../platform/security/callback-address';
import type { KeyRing } from '../../platform/security/data-protection';
import type { GuardedFetch } from '../../platform/security/guarded-fetch';
import { findClient } from '../../platform/store/clients';
import type { Db } from '../../platform/store/database';
import { loadSigningKeys, type KeyManagementSettings } from '../../platform/store/signing-keys';
import { signLogoutToken } from './logout-token';

export interface SignOutDependencies {
  db: Db;
  /** The ring the signing keys are sealed with: without it no logout token can be signed. */
  dataProtection?: KeyRing;
  /** Requests to addresses a client registered, under the callback-address rule (Auth:AllowedInternalTargets). */
  outbound: GuardedFetch;
  /** KeyManagement: which of the keys signs now (the ID tokens' signing key). */
  keyManagement?: KeyManagementSettings;
}

/** One client to tell that a user's session with it ended; `jti` stays the same across the delivery's attempts. */
export interface LogoutDelivery {
  issuer: string;
  userId: string;
  clientId: string;
  sid: string;
  jti: string;
}

export type LogoutDeliveryResult = 'delivered' | 'skipped';

/** Back-Channel Logout 1.0 §2.8: the client answers 200 (or 204) when it logged the session out. */
const isAccepted = (status: number) => status === 200 || status === 204;
/** A refusal the same token would meet again: a 4xx other than a timeout or a rate limit. */
const isRefusal = (status: number) => status >= 400 && status < 500 && status !== 408 && status !== 429;

export function createSignOutActivities({ db, dataProtection, outbound, keyManagement }: SignOutDependencies) {
  return {
    /**
     * Sends the client a logout token (OpenID Connect Back-Channel Logout 1.0) at the BackChannelLogoutUri it has now:
     * a client since removed, disabled or without the address is skipped. A failure throws, to be retried by the
     * workflow's policy; a refusal that a retry would meet again (a 4xx, an address the callback-address rule refuses)
     * is not retried. Each outcome is counted by client; the last failed attempt is logged as an error.
     */
    async sendLogoutToken(input: LogoutDelivery): Promise<LogoutDeliveryResult> {
      const info = Context.current().info;
      const count = (outcome: string) => logoutDeliveries.inc({ client: input.clientId, outcome });
      const client = await findClient(db, input.clientId);
      const settings = (client?.settings ?? {}) as {
        BackChannelLogoutUri?: unknown;
        BackChannelLogoutSessionRequired?: unknown;
      };
      const uri = typeof settings.BackChannelLogoutUri === 'string' ? settings.BackChannelLogoutUri : '';
      if (!client?.enabled || uri === '') {
        count('skipped');
        return 'skipped';
      }
      if (!dataProtection)
        throw ApplicationFailure.nonRetryable(
          'this worker has no DataProtection:Keys, so it cannot unseal the signing keys a logout token is signed with',
          'NoKeyRing',
        );
      const [key] = await loadSigningKeys(db, dataProtection, keyManagement);
      // Duende IdentityServer's default (BackChannelLogoutSessionRequired true): the session id is sent.
      const sid = settings.BackChannelLogoutSessionRequired === false ? undefined : input.sid;
      const token = await signLogoutToken(key, { ...input, sid });
      const last = info.retryPolicy?.maximumAttempts !== undefined && info.attempt >= info.retryPolicy.maximumAttempts;
      const failed = (reason: string, retryable: boolean): never => {
        const gaveUp = last || !retryable;
        count(gaveUp ? 'gave-up' : 'retried');
        const line = { clientId: input.clientId, userId: input.userId, attempt: info.attempt, reason };
        if (gaveUp) log.error('Back-channel logout not delivered; the client keeps its session', line);
        else log.warn('Back-channel logout failed; it is tried again', line);
        if (retryable) throw new Error(`back-channel logout to client ${input.clientId} ${reason}`);
        throw ApplicationFailure.nonRetryable(`back-channel logout to client ${input.clientId} ${reason}`, 'Refused');
      };
      let status: number;
      try {
        const answer = await outbound(uri, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ logout_token: token }),
        });
        status = answer.status;
      } catch (error) {
        if (error instanceof RefusedAddressError) return failed(`refused: ${error.message}`, false);
        return failed(`failed: ${(error as Error).message}`, true);
      }
      if (isAccepted(status)) {
        count('delivered');
        return 'delivered';
      }
      return failed(`answered ${status}`, !isRefusal(status));
    },
  };
}

export type SignOutActivities = ReturnType<typeof createSignOutActivities>;
