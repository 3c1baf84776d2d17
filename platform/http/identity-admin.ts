import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { sendProblem } from './problem';
import { bearerToken } from './bearer';

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * Why a bearer token is refused, in RFC 6750 §3.1's words: `invalid_token` when it is not one the service issued and
 * that still stands (malformed, unverifiable, expired, revoked), `insufficient_scope` when it is, but lacks the right.
 */
export type TokenRefusal = 'invalid_token' | 'insufficient_scope';

/**
 * Whether a bearer token is an access token the service issued for its admin API and that still stands: who it
 * speaks for (`user:{id}` or `client:{id}`, for the audit trail), or why not.
 */
export type ServiceTokenCheck = (token: string) => Promise<{ actor: string } | { refused: TokenRefusal }>;

/** Who an admin request acted as, for the audit trail: `admin-key`, `user:{id}` or `client:{id}`. */
const actors = new WeakMap<Request, string>();
export const adminActorOf = (req: Request): string => actors.get(req) ?? 'admin';

export type AdminCheck = (req: Request) => Promise<'missing' | TokenRefusal | 'admin'>;

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
    if (!serviceToken) return 'invalid_token';
    const verdict = await serviceToken(token);
    if ('refused' in verdict) return verdict.refused;
    actors.set(req, verdict.actor);
    return 'admin';
  };
}

/**
 * RFC 6750 §3.1: no credential is a 401 with a bare challenge; a credential that is no standing token (a wrong key, a
 * forged, expired or revoked token) a 401 with `error="invalid_token"`; a standing token without the right a 403 with
 * `error="insufficient_scope"`.
 */
export function requireIdentityAdmin(check: AdminCheck): RequestHandler {
  return async (req, res, next) => {
    const verdict = await check(req);
    if (verdict === 'admin') return next();
    if (verdict === 'missing') {
      res.set('WWW-Authenticate', 'Bearer');
      return sendProblem(res, {
        status: 401,
        title: 'Unauthorized',
        detail: 'this endpoint needs Authorization: Bearer <admin API key or IdentityAdmin access token>',
      });
    }
    if (verdict === 'invalid_token') {
      res.set('WWW-Authenticate', 'Bearer error="invalid_token"');
      return sendProblem(res, {
        status: 401,
        title: 'Unauthorized',
        detail:
          'the bearer credential is not an admin API key, nor an access token of this service that still stands (malformed, unverifiable, expired or revoked)',
      });
    }
    res.set('WWW-Authenticate', 'Bearer error="insufficient_scope", scope="IdentityAdmin"');
    sendProblem(res, {
      status: 403,
      title: 'Forbidden',
      detail: 'the access token stands but does not carry the IdentityAdmin right (its audience, scope or role)',
    });
  };
}
