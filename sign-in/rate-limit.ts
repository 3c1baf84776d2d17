import type { RequestHandler, Response } from 'express';
import { rateLimit } from 'express-rate-limit';
import type { Db } from '../platform/store/database';
import { countHit, type RateLimitBucket } from '../platform/store/rate-limits';

/**
 * At most `limit` requests per client address in `windowMs` (the address Express derives under Api:TrustedProxies);
 * past it `refuse` answers, after Retry-After is set to the window's length.
 */
export function perClientLimit(windowMs: number, limit: number, refuse: (res: Response) => void): RequestHandler {
  return rateLimit({
    windowMs,
    limit,
    standardHeaders: 'draft-8',
    legacyHeaders: false,
    // An X-Forwarded-For from a peer not in Api:TrustedProxies is expected and ignored, not a misconfiguration.
    validate: { xForwardedForHeader: false },
    handler: (_req, res) => {
      res.set('Retry-After', String(Math.ceil(windowMs / 1000)));
      refuse(res);
    },
  });
}

/**
 * As perClientLimit, but counted in the store (`bucket` per client address), so every API process behind one URL
 * spends one budget: two instances do not allow twice the limit.
 */
export function storedClientLimit(
  db: Db,
  bucket: RateLimitBucket,
  windowSeconds: number,
  limit: number,
  refuse: (res: Response) => void,
): RequestHandler {
  return (req, res, next) => {
    countHit(db, bucket, req.ip ?? req.socket.remoteAddress ?? 'unknown', windowSeconds).then((count) => {
      if (count <= limit) return next();
      res.set('Retry-After', String(windowSeconds));
      refuse(res);
    }, next);
  };
}
