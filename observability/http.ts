import { randomUUID } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { findRoute } from '../api/openapi/routes';
import { DISCOVERY_PATH, OIDC_ROUTES } from '../oidc/paths';
import type { Logger } from './logger';
import { httpRequestDuration, httpRequests } from './metrics';

declare module 'express-serve-static-core' {
  interface Request {
    /** The request's logger: every line carries its request id. */
    log: Logger;
    /** X-Request-Id as the caller sent it (when well formed), or one made for this request. */
    requestId: string;
  }
}

/** An id a caller or a proxy may hand in: short, and nothing a log reader's terminal would interpret. */
const GIVEN_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The provider's own endpoints (oidc-provider answers them, so Express holds no template): their fixed paths are
 * their labels. Any other request without a matched route is "unmatched": a raw path may hold ids, and an attacker
 * choosing paths must not grow the label set.
 */
const PROVIDER_PATHS = new Set<string>([
  ...Object.values(OIDC_ROUTES),
  DISCOVERY_PATH,
  `${OIDC_ROUTES.end_session}/confirm`,
  `${OIDC_ROUTES.end_session}/success`,
]);

/** The provider's paths that carry an id: labelled by their template, never the id. */
const PROVIDER_TEMPLATES: Array<[RegExp, string]> = [
  [new RegExp(`^${OIDC_ROUTES.authorization}/[^/]+$`), `${OIDC_ROUTES.authorization}/:uid`],
];

/** The route template of a request ("/api/v1/profile/{userId}"), for labels and the access log. */
export function routeOf(req: Request): string {
  const path = req.originalUrl.split('?')[0].replace(/(.)\/+$/, '$1');
  const documented = findRoute(req.method, path);
  if (documented) return documented.path;
  // Routes outside the table (sign-in pages, federation, the codec) by the template Express matched.
  const route = req.route as { path?: unknown } | undefined;
  if (typeof route?.path === 'string') return `${req.baseUrl}${route.path}`;
  // The provider is handed Api:PublicUrl's path as its mount path in originalUrl (oidc/index.ts); req.path is the
  // path as it arrived.
  const arrived = req.path.replace(/(.)\/+$/, '$1');
  if (PROVIDER_PATHS.has(arrived)) return arrived;
  return PROVIDER_TEMPLATES.find(([pattern]) => pattern.test(arrived))?.[1] ?? 'unmatched';
}

/**
 * The first middleware of the API: a request id (taken from X-Request-Id or made, and sent back), a logger carrying
 * it, and when the answer is sent, one access-log line and the request metrics. The line names the route template,
 * never the query string (sign-in codes and SCIM filters travel there).
 */
export function requestObservability(base: Logger): RequestHandler {
  return (req, res, next) => {
    const given = req.get('x-request-id');
    req.requestId = given && GIVEN_ID.test(given) ? given : randomUUID();
    res.setHeader('X-Request-Id', req.requestId);
    req.log = base.child({ reqId: req.requestId });
    const started = process.hrtime.bigint();
    res.once('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = routeOf(req);
      const labels = { method: req.method, route, status: String(res.statusCode) };
      httpRequests.inc(labels);
      httpRequestDuration.observe(labels, seconds);
      const level = res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info';
      req.log[level](
        { method: req.method, route, status: res.statusCode, durationMs: Math.round(seconds * 10_000) / 10 },
        `${req.method} ${route} ${res.statusCode}`,
      );
    });
    next();
  };
}
