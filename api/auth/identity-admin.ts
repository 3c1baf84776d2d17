import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { sendProblem } from '../problem';

const digest = (value: string) => createHash('sha256').update(value).digest();

/** The IdentityAdmin policy: a bearer key from Auth:AdminApiKeys, compared in constant time. */
export function requireIdentityAdmin(adminKeys: readonly string[]): RequestHandler {
  const accepted = adminKeys.map(digest);
  return (req, res, next) => {
    const match = /^Bearer\s+(.+)$/i.exec(req.get('authorization') ?? '');
    if (!match) {
      res.set('WWW-Authenticate', 'Bearer');
      return sendProblem(res, { status: 401, title: 'Unauthorized', detail: 'this endpoint needs Authorization: Bearer <admin API key>' });
    }
    const presented = digest(match[1].trim());
    if (!accepted.some((key) => timingSafeEqual(key, presented))) {
      return sendProblem(res, { status: 403, title: 'Forbidden', detail: 'the bearer key does not satisfy the IdentityAdmin policy' });
    }
    next();
  };
}
