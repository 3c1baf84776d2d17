import type { Express, RequestHandler } from 'express';
import type { Operations } from '../platform/http/operations';
import { expressPath } from './openapi/routes';
import type { Auth, RouteSpec } from './openapi/route-spec';
import { sendProblem } from '../platform/http/problem';

/**
 * Mounts every route of the table with its guard and its handler, in the table's order. A route without a handler
 * stops start-up unless the table says when it is absent; so does a handler the table has no route for (it could
 * never be reached, and the OpenAPI document would not show it). An absent admin or SCIM route, which /docs lists
 * all the same, answers behind its guard a 404 problem saying which setting brings it, not a bare "no route"; an
 * absent public route tells anyone nothing of the configuration.
 */
export function mountRoutes(
  app: Express,
  routes: readonly RouteSpec[],
  operations: Operations,
  guards: Record<Auth, RequestHandler[]>,
): void {
  const unrouted = new Set(Object.keys(operations));
  for (const route of routes) {
    const handler = operations[route.operationId];
    unrouted.delete(route.operationId);
    if (handler === undefined) {
      if (route.absent && route.auth === 'public') continue;
      if (route.absent) {
        const absent = route.absent;
        app[route.method](expressPath(route.path), ...guards[route.auth], (_req, res) =>
          sendProblem(res, { status: 404, title: 'Not available in this configuration', detail: absent }),
        );
        continue;
      }
      throw new Error(`route ${route.method.toUpperCase()} ${route.path} has no handler named ${route.operationId}`);
    }
    app[route.method](expressPath(route.path), ...guards[route.auth], ...[handler].flat());
  }
  if (unrouted.size > 0)
    throw new Error(`handlers without a route in api/openapi/routes.ts: ${[...unrouted].join(', ')}`);
}
