import type { Client } from '@temporalio/client';
import express, { type ErrorRequestHandler } from 'express';
import type { TccClient } from '../activities/provisioning/tcc-client';
import type { AppConfig } from '../config/schema';
import { parseAllowList } from '../net/callback-address';
import type { Db } from '../store/database';
import { requireIdentityAdmin } from './auth/identity-admin';
import { sendProblem } from './problem';
import { healthRouter } from './routes/health';
import { migrationStatusRouter } from './routes/migration-status';
import { profileRouter } from './routes/profile';
import { provisioningAppsRouter } from './routes/provisioning-apps';
import { registerRouter } from './routes/register';
import { scimTokensRouter } from './routes/scim-tokens';
import { sendScimError } from './scim/errors';
import { scimRouter } from './scim/router';
import { AttemptInProgressError, createWorkflowRunner, ResultDeadlineError } from './workflow-runner';

export interface ApiDependencies {
  config: AppConfig;
  db: Db;
  temporal: Client;
  /** Used by the app probe (POST /api/v1/provisioning/apps/{appId}/test). */
  http: TccClient;
  log?: Pick<Console, 'error'>;
}

export function createApiApp({ config, db, temporal, http, log = console }: ApiDependencies): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(express.json({ limit: '100kb', type: ['application/json', 'application/*+json'] }));

  const run = createWorkflowRunner(temporal, config.Temporal.TaskQueue, config.Api.ResultTimeoutSeconds);
  const identityAdmin = requireIdentityAdmin(config.Auth.AdminApiKeys);

  app.use(healthRouter({ db, temporal }));
  app.use('/api/v1/profile', identityAdmin, profileRouter({ db, run }));
  app.use('/api/auth/register', registerRouter({ config, db, run }));
  app.use('/api/v1/scim/tokens', identityAdmin, scimTokensRouter({ db }));
  // The management routes exist only with the store-backed provider; otherwise they fall through to 404.
  if (config.Provisioning.AppProvider === 'Store') {
    app.use('/api/v1/provisioning/apps', identityAdmin, provisioningAppsRouter({ db, http, allow: parseAllowList(config.Auth.AllowedInternalTargets) }));
  }
  if (config.Migration.MapStatusEndpoint) app.use(migrationStatusRouter({ config, db }));
  app.use('/scim/v2', scimRouter({ db, run, passwordPolicy: config.Auth.PasswordPolicy, log }));

  app.use((req, res) => sendProblem(res, { status: 404, title: 'Not found', detail: `no route for ${req.method} ${req.path}` }));

  const errors: ErrorRequestHandler = (error, req, res, _next) => {
    if (error instanceof AttemptInProgressError) {
      return sendProblem(res, { status: 409, title: 'Attempt in progress', detail: error.message, workflowId: error.workflowId });
    }
    if (error instanceof ResultDeadlineError) {
      return sendProblem(res, { status: 504, title: 'Still running', detail: error.message, workflowId: error.workflowId });
    }
    if (error?.type === 'entity.parse.failed') {
      if (req.originalUrl.startsWith('/scim/')) return sendScimError(res, 400, 'the body is not valid JSON', 'invalidSyntax');
      return sendProblem(res, { status: 400, title: 'Invalid request', detail: 'the body is not valid JSON' });
    }
    if (error?.name === 'ZodError') {
      return sendProblem(res, { status: 400, title: 'Invalid request', detail: error.issues.map((i: { message: string }) => i.message).join('; ') });
    }
    if (typeof error?.status === 'number' && error.status >= 400 && error.status < 500) {
      return sendProblem(res, { status: error.status, title: 'Invalid request', detail: error.message });
    }
    log.error(`${req.method} ${req.path} failed:`, error);
    sendProblem(res, { status: 500, title: 'Internal error', detail: 'the request failed; the service log has the cause' });
  };
  app.use(errors);
  return app;
}
