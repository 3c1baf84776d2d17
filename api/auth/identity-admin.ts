import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { sendProblem } from '../problem';
import { bearerToken } from './bearer';

const digest = (value: string) => createHash('sha256').update(value).digest();

export type AdminCheck = (req: Request) => 'missing' | 'refused' | 'admin';

/** The IdentityAdmin policy: a bearer key from Auth:AdminApiKeys, compared in constant time. */
export function identityAdminCheck(adminKeys: readonly string[]): AdminCheck {
  const accepted = adminKeys.map(digest);
  return (req) => {
    const token = bearerToken(req);
    if (token === undefined) return 'missing';
    const presented = digest(token);
    return accepted.some((key) => timingSafeEqual(key, presented)) ? 'admin' : 'refused';
  };
}

export function requireIdentityAdmin(adminKeys: readonly string[]): RequestHandler {
  const check = identityAdminCheck(adminKeys);
  return (req, res, next) => {
    const verdict = check(req);
    if (verdict === 'missing') {
      res.set('WWW-Authenticate', 'Bearer');
      return sendProblem(res, {
        status: 401,
        title: 'Unauthorized',
        detail: 'this endpoint needs Authorization: Bearer <admin API key>',
      });
    }
    if (verdict === 'refused') {
      return sendProblem(res, {
        status: 403,
        title: 'Forbidden',
        detail: 'the bearer key does not satisfy the IdentityAdmin policy',
      });
    }
    next();
  };
}
