import type { Client } from '@temporalio/client';
import express from 'express';
import type { TccClient } from '../activities/provisioning/tcc-client';
import type { AppConfig } from '../config/schema';
import { parseAllowList } from '../security/callback-address';
import type { KeyRing } from '../security/data-protection';
import type { Db } from '../store/database';
import { requireIdentityAdmin } from './auth/identity-admin';
import { acceptedBodyTypes, edgeGuard } from './edge-guard';
import { errorHandler } from './error-handler';
import { sendProblem } from './problem';
import { healthRouter } from './routes/health';
import { migrationStatusRouter } from './routes/migration-status';
import { profileRouter } from './routes/profile';
import { provisioningAppsRouter } from './routes/provisioning-apps';
import { registerRouter } from './routes/register';
import { scimTokensRouter } from './routes/scim-tokens';
import { scimRouter } from './scim/router';
import { createWorkflowRunner } from '../client/workflow-runner';

export interface ApiDependencies {
  config: AppConfig;
  db: Db;
  temporal: Client;
  /** Used by the app probe (POST /api/v1/provisioning/apps/{appId}/test). */
  http: TccClient;
  /** Api:PublicUrl, or the listening URL: the base of every URL the service hands out. */
  publicUrl: string;
  /** The data-protection key ring; the store-backed app provider needs it. */
  dataProtection?: KeyRing;
  log?: Pick<Console, 'error'>;
}

export function createApiApp({
  config,
  db,
  temporal,
  http,
  publicUrl,
  dataProtection,
  log = console,
}: ApiDependencies): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(
    express.json({ limit: '100kb', type: [...new Set([...acceptedBodyTypes(true), ...acceptedBodyTypes(false)])] }),
  );
  app.use(edgeGuard());

  const run = createWorkflowRunner(temporal, config.Temporal.TaskQueue, config.Api.ResultTimeoutSeconds);
  const identityAdmin = requireIdentityAdmin(config.Auth.AdminApiKeys);

  app.use(healthRouter({ db, temporal }));
  app.use('/api/v1/profile', identityAdmin, profileRouter({ db, run }));
  app.use('/api/auth/register', registerRouter({ config, db, run }));
  app.use('/api/v1/scim/tokens', identityAdmin, scimTokensRouter({ db }));
  // The management routes exist only with the store-backed provider; otherwise they fall through to 404.
  if (config.Provisioning.AppProvider === 'Store') {
    app.use(
      '/api/v1/provisioning/apps',
      identityAdmin,
      provisioningAppsRouter({
        db,
        ring: dataProtection!,
        http,
        allow: parseAllowList(config.Auth.AllowedInternalTargets),
      }),
    );
  }
  if (config.Migration.MapStatusEndpoint) app.use(migrationStatusRouter({ config, db }));
  app.use(
    '/scim/v2',
    scimRouter({ db, run, passwordPolicy: config.Auth.PasswordPolicy, scimUrl: `${publicUrl}/scim/v2` }),
  );

  app.use((req, res) =>
    sendProblem(res, { status: 404, title: 'Not found', detail: `no route for ${req.method} ${req.path}` }),
  );

  app.use(errorHandler(log));
  return app;
}
