import type { UserProfile } from '../platform/store/users';
import type { CreationOutcome } from './workflows/provisioning';
import type { Response } from 'express';
import type { StoredAnswer } from '../platform/store/schema';
import { sendProblem, userNotFound, type Problem } from '../platform/http/problem';
import { provisioningWorkflowId } from './workflows/ids';
import { reasons } from './tcc';

export type UserView = UserProfile & { provisionedApps: string[] };

export type HttpOutcome = { status: number; user: UserView } | { problem: Problem };

/** The provisioning outcome as an HTTP answer: the user on success, else the outcome's problem. */
export function toHttpOutcome(outcome: CreationOutcome, successStatus: number, { revealIds = true } = {}): HttpOutcome {
  if (outcome.status === 'provisioned') {
    return { status: successStatus, user: { ...outcome.user, provisionedApps: outcome.provisionedApps } };
  }
  return outcomeProblem(outcome, { revealIds });
}

/**
 * The one table from a provisioning outcome that is not a success to its answer, rendered as problem+json by the
 * admin API and registration and as a SCIM error by /scim/v2: 409 duplicate, 404 no such user, 422 rejection or
 * failure (with the app and its reason), 502 partially confirmed (the user is kept). An attempt that ran names its
 * `attemptId`, the id of its workflow: what an operator opens in the Temporal UI (docs/operations.md).
 */
export function outcomeProblem(
  outcome: Exclude<CreationOutcome, { status: 'provisioned' }>,
  { revealIds = true } = {},
): { problem: Problem } {
  switch (outcome.status) {
    case 'duplicate':
      // Authenticated callers learn which user holds the e-mail; the public registration endpoint reveals no ids.
      return {
        problem: {
          status: 409,
          title: 'User already exists',
          detail: outcome.detail,
          ...(revealIds && outcome.existingUserId ? { userId: outcome.existingUserId } : {}),
        },
      };
    case 'not-found':
      return { problem: userNotFound(`id ${outcome.userId}`) };
    case 'unknown-apps':
      return {
        problem: {
          status: 422,
          title: 'Unknown provisioning apps',
          detail: `provisioning apps not configured: ${outcome.appIds.join(', ')}`,
          appIds: outcome.appIds,
          attemptId: provisioningWorkflowId(outcome.user.userId),
        },
      };
    case 'rejected':
      return {
        problem: {
          status: 422,
          title: 'Provisioning rejected',
          detail: `app ${outcome.appId}: ${outcome.reason}`,
          appId: outcome.appId,
          reason: outcome.reason,
          userDeleted: outcome.userDeleted ?? false,
          attemptId: provisioningWorkflowId(outcome.user.userId),
        },
      };
    case 'partially-confirmed':
      return {
        problem: {
          status: 502,
          title: 'Provisioning partially confirmed',
          detail: `confirmed by ${outcome.confirmedApps.join(', ')}; not confirmed by ${outcome.unconfirmedApps.join(', ')} (${outcome.reason}); retry with POST /api/v1/profile/${outcome.user.userId}/provisioning`,
          userId: outcome.user.userId,
          confirmedApps: outcome.confirmedApps,
          unconfirmedApps: outcome.unconfirmedApps,
          reason: outcome.reason,
          attemptId: provisioningWorkflowId(outcome.user.userId),
        },
      };
  }
}

export function toAnswer(outcome: HttpOutcome): StoredAnswer {
  if ('problem' in outcome)
    return {
      status: outcome.problem.status,
      contentType: 'application/problem+json',
      body: { type: 'about:blank', ...outcome.problem },
    };
  return { status: outcome.status, contentType: 'application/json', body: outcome.user };
}

export function answer(res: Response, outcome: HttpOutcome): void {
  if ('problem' in outcome) sendProblem(res, outcome.problem);
  else res.status(outcome.status).json(outcome.user);
}

/**
 * An app's refusal in the app's own words, which a person may read (at authorization, the reason the client is
 * sent); undefined for any other outcome: a call that failed or timed out, a Confirm that did not go through, an
 * approval the store could not hold, whose words are for operators (the log, the admin API's problem details).
 */
export function refusalInAppsWords(outcome: Exclude<CreationOutcome, { status: 'provisioned' }>): string | undefined {
  if (outcome.status !== 'rejected') return undefined;
  const { appId, reason } = outcome;
  const serviceWords = [
    reasons.tryFailed(appId, ''),
    reasons.confirmFailed(appId, ''),
    reasons.unstorableApproval(appId, ''),
    reasons.rejectedWithoutReason(appId),
  ];
  return serviceWords.some((words) => reason.startsWith(words)) ? undefined : reason;
}
