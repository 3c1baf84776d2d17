import type { Client } from '@temporalio/client';
import express from 'express';
import type { TccClient } from '../provisioning/apps/tcc-client';
import type { AppConfig } from '../platform/config/schema';
import { parseAllowList } from '../platform/security/callback-address';
import { trustProxySetting } from '../platform/security/trusted-proxies';
import type { KeyRing } from '../platform/security/data-protection';
import type { Db } from '../platform/store/database';
import { identityAdminCheck, requireIdentityAdmin } from '../platform/http/identity-admin';
import { serviceTokenCheck } from '../sign-in/api/service-token';
import { edgeGuard, rejectJsonProblems } from '../platform/http/edge-guard';
import { isSignInPath } from '../sign-in/sign-in-paths';
import { MISSING_KEY_MESSAGE } from '../platform/config/key-ring';
import { payloadCodecOf } from '../platform/temporal/data-converter';
import { codecRouter } from '../platform/http/codec';
import { errorHandler } from '../platform/http/error-handler';
import { sendProblem, speaksErrorDialect } from '../platform/http/problem';
import type { Operations } from '../platform/http/operations';
import type { AppProvider } from '../provisioning/apps/apps';
import { clientsOperations } from '../sign-in/api/clients';
import { oidcProvidersOperations, samlProvidersOperations } from '../sign-in/api/sso-providers';
import { healthOperations } from './routes/health';
import { apiDocumentOperations, apiReferencePage } from './routes/api-docs';
import { migrationStatusOperations } from '../migration/api/status';
import { profileOperations } from '../provisioning/api/profile';
import { provisioningAppsOperations } from '../provisioning/api/apps';
import { registerOperations } from '../sign-in/api/register';
import { scimTokensOperations } from '../scim/tokens';
import { scimDocumentationPage } from '../scim/documentation';
import { answerScimError, SCIM_CONTENT_TYPE, SCIM_ERROR_DIALECT } from '../scim/scim-errors';
import { requireScimToken, scimFallback, scimOperations } from '../scim/router';
import { mountRoutes } from './mount-routes';
import { accountAdminOperations } from '../sign-in/api/account-admin';
import type { RecoveryMails } from '../sign-in/recovery/router';
import type { SourceReadThrough } from '../sign-in/read-through';
import { ROUTES } from './openapi/routes';
import { createWorkflowRunner } from '../provisioning/workflow-runner';
import { createSignOut } from '../provisioning/sign-out-notices';
import { requestObservability } from '../platform/observability/http';
import { routeOf } from './route-labels';
import { logger, type Logger } from '../platform/observability/logger';

/** The body types each part of the service takes; a body of any other type is refused with 415 before a route sees it. */
const BODY_TYPES = {
  scim: [SCIM_CONTENT_TYPE, 'application/json'],
  json: ['application/json'],
  form: ['application/x-www-form-urlencoded'],
};
const JSON_BODY_TYPES = [...new Set([...BODY_TYPES.scim, ...BODY_TYPES.json])];
const bodyTypesOf = (req: express.Request) =>
  isSignInPath(req.path) ? BODY_TYPES.form : req.originalUrl.startsWith('/scim/') ? BODY_TYPES.scim : BODY_TYPES.json;

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
  /** The mails of account recovery; the admin's reset mail exists with sign-in only (its links lead there). */
  mails?: RecoveryMails;
  /** The cutover's read-through window (Migration:ReadThrough), while it is configured. */
  readThrough?: SourceReadThrough;
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
  mails,
  readThrough,
  log = logger,
}: ApiDependencies): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.use(requestObservability(log, routeOf));
  // The client address (the key of the sign-in and registration limits) comes from X-Forwarded-For only when the
  // request arrived from one of Api:TrustedProxies; from anyone else the header is the client's own say.
  app.set('trust proxy', trustProxySetting(config.Api.TrustedProxies));
  app.use('/scim', speaksErrorDialect(SCIM_ERROR_DIALECT));
  app.use(edgeGuard(bodyTypesOf));
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
  const allow = parseAllowList(config.Auth.AllowedInternalTargets);
  const scimUrl = `${publicUrl}/scim/v2`;

  // Each surface's handlers by operationId; a surface a configuration leaves out has none, and its routes answer 404
  // (the table names the setting in each such route's `absent`).
  const operations: Operations = {
    ...healthOperations({ db, temporal }),
    ...apiDocumentOperations(publicUrl),
    ...profileOperations({ db, run, passwordPolicy: config.Auth.PasswordPolicy, issuer: publicUrl }),
    ...registerOperations({ config, db, run, mails: signIn && mails, readThrough }),
    ...scimTokensOperations({ db }),
    ...accountAdminOperations({ db, mails: signIn && mails, signOut: createSignOut({ db, run, issuer: publicUrl }) }),
    ...clientsOperations({ db, apps, allow }),
    // Upstream providers' client secrets are sealed at rest: the routes exist where the key ring does.
    ...(dataProtection && oidcProvidersOperations({ db, ring: dataProtection, allow })),
    ...samlProvidersOperations({ db }),
    // The management routes exist only with the store-backed provider.
    ...(config.Provisioning.AppProvider === 'Store' &&
      provisioningAppsOperations({ db, ring: dataProtection!, http, allow })),
    ...(config.Migration.MapStatusEndpoint && migrationStatusOperations({ config, db, isAdmin: adminCheck })),
    ...scimOperations({
      db,
      run,
      passwordPolicy: config.Auth.PasswordPolicy,
      scimUrl,
      documentationUrl: `${publicUrl}/docs/scim`,
      issuer: publicUrl,
    }),
  };
  mountRoutes(app, ROUTES, operations, { admin: [identityAdmin], scim: [requireScimToken(db)], public: [] });

  // Pages for people, beside the API's operations: the API reference and the SCIM guide (public: a SCIM client's
  // administrator reads it before holding a token).
  app.use(apiReferencePage());
  app.get('/docs/scim', (_req, res) => res.type('html').send(scimDocumentationPage(scimUrl)));
  app.use('/scim/v2', scimFallback(db));

  app.use((req, res) =>
    sendProblem(res, { status: 404, title: 'Not found', detail: `no route for ${req.method} ${req.path}` }),
  );

  app.use(errorHandler([answerScimError]));
  return app;
}
