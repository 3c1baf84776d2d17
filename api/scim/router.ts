import { Router, type RequestHandler } from 'express';
import type { Db } from '../../store/database';
import { isValidScimToken } from '../../store/scim-tokens';
import { bearerToken } from '../auth/bearer';
import { scimDiscoveryRouter } from './discovery';
import { sendScimError } from './errors';
import { scimGroupsRouter } from './groups';
import { scimUsersRouter } from './users';
import type { ScimDependencies } from './dependencies';

export type { ScimDependencies };

function requireScimToken(db: Db): RequestHandler {
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
export function scimRouter(deps: ScimDependencies): Router {
  const router = Router();
  router.use(requireScimToken(deps.db));
  router.use(scimDiscoveryRouter(deps.scimUrl, deps.documentationUrl));
  router.use('/Users', scimUsersRouter(deps));
  router.use('/Groups', scimGroupsRouter(deps));
  // A search across resource types (RFC 7644 §3.4.3 at the root) is not offered: each type has its own.
  router.post('/.search', (_req, res) =>
    sendScimError(res, 501, 'search across resource types is not supported; POST /Users/.search or /Groups/.search'),
  );
  router.use((req, res) => sendScimError(res, 404, `no SCIM endpoint ${req.method} ${req.path}`));
  return router;
}
