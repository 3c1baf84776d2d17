import type { RequestHandler, Response } from 'express';
import { rateLimit } from 'express-rate-limit';

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
