import type { Request } from 'express';
import { DISCOVERY_PATH, OIDC_ROUTES } from '../sign-in/sign-in-paths';
import { findRoute } from './openapi/routes';

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
  // The provider is handed Api:PublicUrl's path as its mount path in originalUrl (oidc/sign-in-router.ts); req.path is the
  // path as it arrived.
  const arrived = req.path.replace(/(.)\/+$/, '$1');
  if (PROVIDER_PATHS.has(arrived)) return arrived;
  return PROVIDER_TEMPLATES.find(([pattern]) => pattern.test(arrived))?.[1] ?? 'unmatched';
}
