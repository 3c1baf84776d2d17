import { Router, type RequestHandler } from 'express';
import type { Db } from '../platform/store/database';
import { isValidScimToken } from './store/scim-tokens';
import { bearerToken } from '../platform/http/bearer';
import type { Operations } from '../platform/http/operations';
import { DISCOVERY_PATHS, scimDiscoveryOperations } from './discovery';
import { sendScimError } from './scim-errors';
import { scimGroupsOperations } from './group-endpoints';
import { scimUsersOperations } from './user-endpoints';
import type { ScimDependencies } from './scim-dependencies';

export type { ScimDependencies };

/** The `scim` guard of the route table: a SCIM bearer token made with POST /api/v1/scim/tokens. */
export function requireScimToken(db: Db): RequestHandler {
  return async (req, res, next) => {
    const token = bearerToken(req);
    if (token === undefined || !(await isValidScimToken(db, token))) {
      res.set('WWW-Authenticate', 'Bearer');
      return sendScimError(res, 401, 'a valid SCIM bearer token is required (see POST /api/v1/scim/tokens)');
    }
    next();
  };
}

/**
 * SCIM 2.0 (RFC 7643/7644) under /scim/v2: every answer in SCIM's own shapes (errors through the app's one error
 * handler, which renders them in SCIM's schema here). `scimUrl`: the public URL of /scim/v2, from Api:PublicUrl; never
 * the request's Host header, which the client chooses.
 */
export function scimOperations(deps: ScimDependencies): Operations {
  return {
    ...scimDiscoveryOperations(deps.scimUrl, deps.documentationUrl),
    ...scimUsersOperations(deps),
    ...scimGroupsOperations(deps),
    // A search across resource types (RFC 7644 §3.4.3 at the root) is not offered: each type has its own.
    searchScimResources: (_req, res) =>
      sendScimError(res, 501, 'search across resource types is not supported; POST /Users/.search or /Groups/.search'),
  };
}

/**
 * What /scim/v2 answers past the route table, mounted after it: a token first (an unknown path tells nothing to a
 * caller without one), 405 for a method the read-only discovery endpoints lack, 404 in SCIM's schema.
 */
export function scimFallback(db: Db): Router {
  const router = Router();
  router.use(requireScimToken(db));
  router.all(DISCOVERY_PATHS, (req, res, next) => {
    if (req.method === 'GET') return next();
    res.set('Allow', 'GET');
    sendScimError(res, 405, `${req.path} answers GET only`);
  });
  router.use((req, res) => sendScimError(res, 404, `no SCIM endpoint ${req.method} ${req.path}`));
  return router;
}
