import { log, proxyActivities, type ActivityOptions, uuid4 } from '@temporalio/workflow';
import type { SignOutActivities } from '../activities/logout-delivery';
import type { SignOutInput } from '../../platform/temporal/sign-out-workflow';

export type { SignOutInput };

/**
 * A logout token to a client (back-channel logout): 10 seconds an attempt (the request's own limit, with room), retried
 * with back-off for about forty minutes; the activity counts its last failed attempt as given up.
 */
const LOGOUT_DELIVERY: ActivityOptions = {
  startToCloseTimeout: '15 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 minutes', maximumAttempts: 16 },
};

const delivery = proxyActivities<SignOutActivities>(LOGOUT_DELIVERY);

export interface SignOutResult {
  delivered: string[];
  skipped: string[];
  failed: string[];
}

/**
 * OpenID Connect Back-Channel Logout: every client of the ended sessions gets a logout token, each on its own and
 * retried (LOGOUT_DELIVERY), so one client that is down never holds up another. A token's `jti` is fixed here, so a
 * client that took a token whose answer was lost sees the retry as the same logout. Its type name is NOTIFY_SIGN_OUT
 * (platform/temporal/sign-out-workflow.ts), by which provisioning's removals start it.
 */
export async function notifySignOut(input: SignOutInput): Promise<SignOutResult> {
  const results = await Promise.allSettled(
    input.notices.map((notice) =>
      delivery.sendLogoutToken({ issuer: input.issuer, userId: input.userId, ...notice, jti: uuid4() }),
    ),
  );
  const result: SignOutResult = { delivered: [], skipped: [], failed: [] };
  input.notices.forEach(({ clientId }, i) => {
    const settled = results[i];
    if (settled.status === 'rejected') result.failed.push(clientId);
    else result[settled.value].push(clientId);
  });
  for (const clientId of result.failed) log.error('Back-channel logout gave up', { clientId, userId: input.userId });
  return result;
}
