import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { sendProblem } from './problem';
import { bearerToken } from './bearer';

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * Whether a bearer token is an access token the service issued for its admin API and that still stands: who it
 * speaks for (`user:{id}` or `client:{id}`, for the audit trail), or undefined.
 */
export type ServiceTokenCheck = (token: string) => Promise<string | undefined>;

/** Who an admin request acted as, for the audit trail: `admin-key`, `user:{id}` or `client:{id}`. */
const actors = new WeakMap<Request, string>();
export const adminActorOf = (req: Request): string => actors.get(req) ?? 'admin';

export type AdminCheck = (req: Request) => Promise<'missing' | 'refused' | 'admin'>;

/**
 * The IdentityAdmin policy: a bearer key from Auth:AdminApiKeys, compared in constant time, or an access token the
 * service issued for its admin API (when sign-in is on).
 */
export function identityAdminCheck(adminKeys: readonly string[], serviceToken?: ServiceTokenCheck): AdminCheck {
  const accepted = adminKeys.map(digest);
  return async (req) => {
    const token = bearerToken(req);
    if (token === undefined) return 'missing';
    const presented = digest(token);
    if (accepted.some((key) => timingSafeEqual(key, presented))) {
      actors.set(req, 'admin-key');
      return 'admin';
    }
    const actor = serviceToken && (await serviceToken(token));
    if (!actor) return 'refused';
    actors.set(req, actor);
    return 'admin';
  };
}

export function requireIdentityAdmin(check: AdminCheck): RequestHandler {
  return async (req, res, next) => {
    const verdict = await check(req);
    if (verdict === 'missing') {
      res.set('WWW-Authenticate', 'Bearer');
      return sendProblem(res, {
        status: 401,
        title: 'Unauthorized',
        detail: 'this endpoint needs Authorization: Bearer <admin API key or IdentityAdmin access token>',
      });
    }
    if (verdict === 'refused') {
      return sendProblem(res, {
        status: 403,
        title: 'Forbidden',
        detail: 'the bearer credential does not satisfy the IdentityAdmin policy',
      });
    }
    next();
  };
}
