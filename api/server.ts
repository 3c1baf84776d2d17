import { createServer, type RequestListener, type Server } from 'node:http';
import type { Express } from 'express';
import { Connection, type Client } from '@temporalio/client';
import { loadConfig } from '../platform/config/load';
import type { AppConfig } from '../platform/config/schema';
import { createServiceContext, type ServiceContext } from '../composition/service-context';
import { temporalClient } from '../platform/temporal/data-converter';
import { ensureSearchAttributes } from '../platform/temporal/search-attribute-check';
import { closeServer, listen, listeningUrl } from '../platform/net/listen';
import { runMain, standaloneSettings } from '../composition/process';
import { purgeExpiredIdempotencyKeys } from '../platform/store/idempotency-keys';
import { purgeAbandonedCredentials } from '../provisioning/store/pending-credentials';
import { purgeExpiredOidcPayloads } from '../platform/store/oidc-payloads';
import { purgeSignInAttempts } from '../sign-in/store/sign-in-users';
import { purgeExpiredHits } from '../platform/store/rate-limits';
import { purgeOldRemovals } from '../platform/store/user-removals';
import { purgeRevokedAccessTokens } from '../sign-in/store/admin-tokens';
import type { Db } from '../platform/store/database';
import { apiWorkflowRunner, createApiApp } from './app';
import { createSignIn } from '../sign-in/oidc/sign-in-router';
import { MISSING_KEY_MESSAGE } from '../platform/config/key-ring';
import { logger } from '../platform/observability/logger';
import { startMetricsServer } from '../platform/observability/metrics-server';
import { describeApps } from '../provisioning/apps/apps';
import { purgeAccountTokens } from '../sign-in/store/account-tokens';
import { purgeAuditEvents } from '../sign-in/store/audit-events';
import { createMailer } from '../platform/email/mailer';
import { configureBranding } from '../platform/http/html';
import { recoveryMails } from '../sign-in/recovery/router';
import { readThroughWindow } from '../composition/read-through-window';
import { purgeDeadReservations } from '../provisioning/creation';
import type { WorkflowRunner } from '../provisioning/workflow-runner';

/** What the API clears out every hour: rows kept only for a while, each table with its own retention. */
const purges = (config: AppConfig, run: WorkflowRunner): Array<[string, (db: Db) => Promise<unknown>]> => [
  ['abandoned credentials', purgeAbandonedCredentials],
  ['e-mail reservations of ended attempts', (db) => purgeDeadReservations(db, run)],
  ['expired idempotency keys', purgeExpiredIdempotencyKeys],
  ['expired sign-in artefacts', purgeExpiredOidcPayloads],
  ['counted sign-in attempts', (db) => purgeSignInAttempts(db, config.Auth.SignInRateLimit.WindowSeconds)],
  ['counted requests past their window', purgeExpiredHits],
  ['old removal answers', purgeOldRemovals],
  ['revocations of expired access tokens', purgeRevokedAccessTokens],
  ['old account links', purgeAccountTokens],
  ['audit events past Audit:RetentionDays', (db) => purgeAuditEvents(db, config.Audit.RetentionDays)],
];

export interface RunningApi {
  server: Server;
  /** The Express app that answers once start-up is done (the server's listener answers 503 before). */
  app: Express;
  /** Where it listens, with 127.0.0.1 for a wildcard address. */
  url: string;
  publicUrl: string;
  close: () => Promise<void>;
}

/** The answer while the API is still starting: 503 with Retry-After, in the API's problem shape. */
const startingUp: RequestListener = (_req, res) => {
  res.writeHead(503, { 'content-type': 'application/problem+json', 'retry-after': '1' });
  res.end(
    JSON.stringify({
      type: 'about:blank',
      status: 503,
      title: 'Starting',
      detail: 'the service is starting; retry in a moment',
    }),
  );
};

export async function startApi(
  config: AppConfig,
  context: Pick<ServiceContext, 'db' | 'http' | 'apps' | 'dataProtection' | 'source' | 'sourceDataProtection'>,
  temporal: Client,
): Promise<RunningApi> {
  const { db, http, apps, dataProtection } = context;
  if (config.Auth.AdminApiKeys.length === 0)
    logger.warn('api: Auth:AdminApiKeys is empty, so every admin request is refused');
  await purgeAbandonedCredentials(db);
  // The port is bound first: its number, when 0 was asked for, is part of the default public URL the routes build on.
  // Until the routes are ready (sign-in set-up reads the store), every request that arrives is answered 503 with
  // Retry-After rather than accepted and left without an answer.
  let handle: RequestListener = startingUp;
  const server = createServer((req, res) => handle(req, res));
  await listen(server, config.Api.Port, config.Api.Host, 'api', 'PORT (or Api:Port)');
  const url = listeningUrl(server, config.Api.Host);
  const publicUrl = config.Api.PublicUrl ?? url;
  configureBranding(config.SignIn);
  const mailer = createMailer(config);
  const mails = recoveryMails({ db, config, mailer, publicUrl });
  const window = readThroughWindow(config, context);
  const run = apiWorkflowRunner(temporal, config);
  const signIn = dataProtection
    ? await createSignIn({
        config,
        db,
        ring: dataProtection,
        run,
        issuer: publicUrl,
        mailer,
        mails,
        readThrough: window.readThrough,
      })
    : undefined;
  if (!signIn) logger.warn(`api: sign-in is off: ${MISSING_KEY_MESSAGE}`);
  if (config.Api.PublicUrl?.startsWith('https:') && config.Api.TrustedProxies.length === 0)
    logger.warn(
      'api: Api:PublicUrl is https but Api:TrustedProxies is empty: X-Forwarded-For is not believed, so behind a proxy every caller counts as the proxy toward the sign-in and registration limits; list the proxy addresses',
    );
  const app = createApiApp({
    config,
    db,
    temporal,
    http,
    apps,
    publicUrl,
    dataProtection,
    signIn,
    mails,
    readThrough: window.readThrough,
  });
  handle = app;
  logger.info(`api: listening on ${url} (health: ${url}/healthz)`);
  logger.info(
    `api: API reference ${publicUrl}/docs, OpenAPI document ${publicUrl}/openapi.json, SCIM ${publicUrl}/scim/v2`,
  );
  if (signIn) logger.info(`api: sign-in issuer ${publicUrl} (${publicUrl}/.well-known/openid-configuration)`);
  logger.info(`api: provisioning apps: ${await describeApps(apps)}`);
  logger.info(`api: mail goes to ${mailer.destination}`);
  const purge = setInterval(() => {
    for (const [what, clear] of purges(config, run))
      clear(db).catch((error: Error) => logger.warn(`api: purging ${what} failed: ${error.message}`));
  }, 3600_000).unref();
  return {
    server,
    app,
    url,
    publicUrl,
    close: () => {
      clearInterval(purge);
      mailer.close();
      return closeServer(server).finally(() => window.close());
    },
  };
}

export async function connectTemporal(config: AppConfig, address: string): Promise<Client> {
  return temporalClient(await Connection.connect({ address }), config);
}

if (require.main === module) {
  runMain('api', async () => {
    const config = loadConfig();
    const { databaseUrl, temporalAddress: address } = standaloneSettings(config, 'API');
    const context = await createServiceContext(config, databaseUrl);
    const temporal = await connectTemporal(config, address);
    await ensureSearchAttributes(temporal.connection, config.Temporal.Namespace);
    const api = await startApi(config, context, temporal);
    const metrics = await startMetricsServer(config, 'api');
    return async () => {
      await metrics?.close();
      await api.close();
      await temporal.connection.close();
      await context.close();
    };
  });
}
