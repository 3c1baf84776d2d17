import type { Client } from '@temporalio/client';
import express from 'express';
import type { TccClient } from '../activities/provisioning/tcc-client';
import type { AppConfig } from '../config/schema';
import { parseAllowList } from '../security/callback-address';
import { trustProxySetting } from '../security/trusted-proxies';
import type { KeyRing } from '../security/data-protection';
import type { Db } from '../store/database';
import { identityAdminCheck, requireIdentityAdmin } from './auth/identity-admin';
import { serviceTokenCheck } from './auth/service-token';
import { edgeGuard, JSON_BODY_TYPES, rejectJsonProblems } from './edge-guard';
import { isSignInPath } from '../oidc/paths';
import { MISSING_KEY_MESSAGE } from '../config/key-ring';
import { payloadCodecOf } from '../composition/temporal-data-converter';
import { codecRouter } from './routes/codec';
import { errorHandler } from './error-handler';
import { sendProblem } from './problem';
import type { AppProvider } from '../activities/provisioning/apps';
import { clientsRouter } from './routes/clients';
import { oidcProvidersRouter, samlProvidersRouter } from './routes/sso-providers';
import { healthRouter } from './routes/health';
import { apiDocsRouter } from './routes/api-docs';
import { migrationStatusRouter } from './routes/migration-status';
import { profileRouter } from './routes/profile';
import { provisioningAppsRouter } from './routes/provisioning-apps';
import { registerRouter } from './routes/register';
import { scimTokensRouter } from './routes/scim-tokens';
import { scimDocumentationPage } from './scim/documentation';
import { scimRouter } from './scim/router';
import { createWorkflowRunner } from '../client/workflow-runner';
import { requestObservability } from '../observability/http';
import { routeOf } from './route-labels';
import { logger, type Logger } from '../observability/logger';

export interface ApiDependencies {
  config: AppConfig;
  db: Db;
  temporal: Client;
  /** Used by the app probe (POST /api/v1/provisioning/apps/{appId}/test). */
  http: TccClient;
  /** The provisioning apps, to refuse a client naming an app that does not exist. */
  apps: AppProvider;
  /** Api:PublicUrl, or the listening URL: the base of every URL the service hands out. */
  publicUrl: string;
  /** The data-protection key ring; the store-backed app provider needs it. */
  dataProtection?: KeyRing;
  /** The OpenID Connect provider and its sign-in pages, when the service has a data-protection key ring. */
  signIn?: express.Router;
  /** The logger every request's lines go to (each with its request id); the process's logger by default. */
  log?: Logger;
}

/** The runner every API route starts workflows with: the provisioning task queue, the API's result deadline. */
export const apiWorkflowRunner = (temporal: Client, config: AppConfig) =>
  createWorkflowRunner(temporal, config.Temporal.TaskQueue, config.Api.ResultTimeoutSeconds);

/** Without a data-protection key ring there is no sign-in: its paths say why instead of answering 404. */
const signInUnavailable: express.RequestHandler = (req, res, next) => {
  if (!isSignInPath(req.path)) return next();
  sendProblem(res, {
    status: 503,
    title: 'Sign-in unavailable',
    detail: `sign-in keeps signing keys and MFA secrets sealed at rest and needs a data-protection key. ${MISSING_KEY_MESSAGE}`,
  });
};

export function createApiApp({
  config,
  db,
  temporal,
  http,
  apps,
  publicUrl,
  dataProtection,
  signIn,
  log = logger,
}: ApiDependencies): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(requestObservability(log, routeOf));
  // The client address (the key of the sign-in and registration limits) comes from X-Forwarded-For only when the
  // request arrived from one of Api:TrustedProxies; from anyone else the header is the client's own say.
  app.set('trust proxy', trustProxySetting(config.Api.TrustedProxies));
  app.use(edgeGuard());
  // The service's own access tokens count only where it issues them.
  const adminCheck = identityAdminCheck(
    config.Auth.AdminApiKeys,
    signIn ? serviceTokenCheck(db, publicUrl) : undefined,
  );
  const identityAdmin = requireIdentityAdmin(adminCheck);
  // Ahead of the JSON parser: a batch of payloads from the Temporal UI may exceed the API's own body limit.
  app.use(
    '/codec',
    codecRouter({
      codec: payloadCodecOf(config),
      allowedOrigins: config.Temporal.CodecCorsOrigins,
      identityAdmin,
      openToLoopback: config.Temporal.CodecOpenToLoopback,
    }),
  );
  app.use(signIn ?? signInUnavailable);
  app.use(express.json({ limit: '100kb', type: JSON_BODY_TYPES }));
  app.use(rejectJsonProblems());

  const run = apiWorkflowRunner(temporal, config);

  app.use(healthRouter({ db, temporal }));
  app.use(apiDocsRouter(publicUrl));
  app.use('/api/v1/profile', identityAdmin, profileRouter({ db, run, passwordPolicy: config.Auth.PasswordPolicy }));
  app.use('/api/auth/register', registerRouter({ config, db, run }));
  app.use('/api/v1/scim/tokens', identityAdmin, scimTokensRouter({ db }));
  app.use('/api/v1/clients', identityAdmin, clientsRouter({ db, apps }));
  // Upstream providers' client secrets are sealed at rest: the routes exist where the key ring does.
  if (dataProtection)
    app.use(
      '/api/v1/sso/oidc-providers',
      identityAdmin,
      oidcProvidersRouter({ db, ring: dataProtection, allow: parseAllowList(config.Auth.AllowedInternalTargets) }),
    );
  app.use('/api/v1/sso/saml-providers', identityAdmin, samlProvidersRouter({ db }));
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
  if (config.Migration.MapStatusEndpoint) app.use(migrationStatusRouter({ config, db, isAdmin: adminCheck }));
  // Public: a SCIM client's administrator reads it before holding a token.
  app.get('/docs/scim', (_req, res) => res.type('html').send(scimDocumentationPage(`${publicUrl}/scim/v2`)));
  app.use(
    '/scim/v2',
    scimRouter({
      db,
      run,
      passwordPolicy: config.Auth.PasswordPolicy,
      scimUrl: `${publicUrl}/scim/v2`,
      documentationUrl: `${publicUrl}/docs/scim`,
    }),
  );

  app.use((req, res) =>
    sendProblem(res, { status: 404, title: 'Not found', detail: `no route for ${req.method} ${req.path}` }),
  );

  app.use(errorHandler());
  return app;
}
