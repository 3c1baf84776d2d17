import { log, ParentClosePolicy, proxyActivities, startChild, uuid4, workflowInfo } from '@temporalio/workflow';
import type { SignOutActivities } from '../activities/logout-delivery';
import type { SignOutNotice } from '../../platform/store/schema';
import { LOGOUT_DELIVERY } from './activity-policies';
import { signOutWorkflowId } from './ids';
import { userIdOfParent } from '../../platform/temporal/search-attributes';

const delivery = proxyActivities<SignOutActivities>(LOGOUT_DELIVERY);

export interface SignOutInput {
  /** The issuer the client's ID tokens named (Api:PublicUrl): the logout token's `iss`. */
  issuer: string;
  userId: string;
  notices: SignOutNotice[];
}

export interface SignOutResult {
  delivered: string[];
  skipped: string[];
  failed: string[];
}

/**
 * OpenID Connect Back-Channel Logout: every client of the ended sessions gets a logout token, each on its own and
 * retried (LOGOUT_DELIVERY), so one client that is down never holds up another. A token's `jti` is fixed here, so a
 * client that took a token whose answer was lost sees the retry as the same logout.
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

/** Clients are told by a detached workflow, so a removal's answer never waits on them (as apps are, background.ts). */
export async function signOutInBackground(issuer: string | undefined, userId: string, notices: SignOutNotice[]) {
  if (!issuer || notices.length === 0) return;
  await startChild(notifySignOut, {
    workflowId: signOutWorkflowId(userId, workflowInfo().runId),
    args: [{ issuer, userId, notices }],
    typedSearchAttributes: userIdOfParent(),
    parentClosePolicy: ParentClosePolicy.ABANDON,
  });
}
