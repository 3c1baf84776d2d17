import type { Client } from '@temporalio/client';
import express, { type ErrorRequestHandler } from 'express';
import type { AppConfig } from '../config/schema';
import type { Db } from '../store/database';
import { requireIdentityAdmin } from './auth/identity-admin';
import { sendProblem } from './problem';
import { healthRouter } from './routes/health';
import { profileRouter } from './routes/profile';
import { AttemptInProgressError, createWorkflowRunner, ResultDeadlineError } from './workflow-runner';

export interface ApiDependencies {
  config: AppConfig;
  db: Db;
  temporal: Client;
  log?: Pick<Console, 'error'>;
}

export function createApiApp({ config, db, temporal, log = console }: ApiDependencies): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(express.json({ limit: '100kb', type: ['application/json', 'application/*+json'] }));

  const run = createWorkflowRunner(temporal, config.Temporal.TaskQueue, config.Api.ResultTimeoutSeconds);
  const identityAdmin = requireIdentityAdmin(config.Auth.AdminApiKeys);

  app.use(healthRouter({ db, temporal }));
  app.use('/api/v1/profile', identityAdmin, profileRouter({ db, run }));

  app.use((req, res) => sendProblem(res, { status: 404, title: 'Not found', detail: `no route for ${req.method} ${req.path}` }));

  const errors: ErrorRequestHandler = (error, req, res, _next) => {
    if (error instanceof AttemptInProgressError) {
      return sendProblem(res, { status: 409, title: 'Attempt in progress', detail: error.message, workflowId: error.workflowId });
    }
    if (error instanceof ResultDeadlineError) {
      return sendProblem(res, { status: 504, title: 'Still running', detail: error.message, workflowId: error.workflowId });
    }
    if (error?.type === 'entity.parse.failed') {
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
