import type { UserProfile } from '../store/users';
import type { CreationOutcome } from '../workflows/provisioning';
import type { Response } from 'express';
import { sendProblem, type Problem } from './problem';

export type UserView = UserProfile & { provisionedApps: string[] };

export type HttpOutcome = { status: number; user: UserView } | { problem: Problem };

/**
 * Maps a provisioning outcome onto the admin API's answers: 201/200 provisioned, 409 duplicate,
 * 422 rejection or failure (with the app and its reason), 502 partially confirmed (the user is kept).
 */
export function toHttpOutcome(outcome: CreationOutcome, successStatus: number): HttpOutcome {
  switch (outcome.status) {
    case 'provisioned':
      return { status: successStatus, user: { ...outcome.user, provisionedApps: outcome.provisionedApps } };
    case 'duplicate':
      return { problem: { status: 409, title: 'User already exists', detail: outcome.detail } };
    case 'not-found':
      return { problem: { status: 404, title: 'User not found', detail: `no user with id ${outcome.userId}` } };
    case 'unknown-apps':
      return {
        problem: { status: 422, title: 'Unknown provisioning apps', detail: `provisioning apps not configured: ${outcome.appIds.join(', ')}`, appIds: outcome.appIds },
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
        },
      };
  }
}

export function answer(res: Response, outcome: HttpOutcome): void {
  if ('problem' in outcome) sendProblem(res, outcome.problem);
  else res.status(outcome.status).json(outcome.user);
}
