import { Router, type ErrorRequestHandler, type RequestHandler } from 'express';
import type { PasswordPolicy } from '../../config/schema';
import type { Db } from '../../store/database';
import { isValidScimToken } from '../../store/scim-tokens';
import { AttemptInProgressError, ResultDeadlineError, type WorkflowRunner } from '../workflow-runner';
import { scimDiscoveryRouter } from './discovery';
import { ScimError, sendScimError } from './errors';
import { scimGroupsRouter } from './groups';
import { scimUsersRouter } from './users';

function requireScimToken(db: Db): RequestHandler {
  return async (req, res, next) => {
    const match = /^Bearer\s+(.+)$/i.exec(req.get('authorization') ?? '');
    if (!match || !(await isValidScimToken(db, match[1].trim()))) {
      res.set('WWW-Authenticate', 'Bearer');
      return sendScimError(res, 401, 'a valid SCIM bearer token is required (see POST /api/v1/scim/tokens)');
    }
    next();
  };
}

/** SCIM 2.0 (RFC 7643/7644) under /scim/v2: every answer, errors included, in SCIM's own shapes. */
export function scimRouter(deps: { db: Db; run: WorkflowRunner; passwordPolicy: PasswordPolicy; log: Pick<Console, 'error'> }): Router {
  const router = Router();
  router.use(requireScimToken(deps.db));
  router.use(scimDiscoveryRouter());
  router.use('/Users', scimUsersRouter(deps));
  router.use('/Groups', scimGroupsRouter(deps));
  router.use((req, res) => sendScimError(res, 404, `no SCIM endpoint ${req.method} ${req.path}`));

  const errors: ErrorRequestHandler = (error, req, res, _next) => {
    if (error instanceof ScimError) return sendScimError(res, error.status, error.message, error.scimType);
    if (error instanceof AttemptInProgressError) return sendScimError(res, 409, error.message, 'uniqueness');
    if (error instanceof ResultDeadlineError) return sendScimError(res, 504, error.message);
    deps.log.error(`SCIM ${req.method} ${req.path} failed:`, error);
    sendScimError(res, 500, 'the request failed; the service log has the cause');
  };
  router.use(errors);
  return router;
}
