import { createServer, type RequestListener, type Server } from 'node:http';
import type { Express } from 'express';
import { Connection, type Client } from '@temporalio/client';
import { loadConfig } from '../platform/config/load';
import type { AppConfig } from '../platform/config/config-schema';
import { createServiceContext, type ServiceContext } from '../composition/service-context';
import { temporalClient } from '../platform/temporal/data-converter';
import { ensureSearchAttributes } from '../platform/temporal/search-attribute-check';
import { closeServer, listen, listeningUrl } from '../platform/net/listen';
import { runMain, standaloneSettings } from '../composition/process';
import { assembleApi, type AssembledApi } from '../composition/api-dependencies';
import { purgeAtStart, startRetention } from '../composition/purges';
import { createApiApp } from './app';
import { logger } from '../platform/observability/logger';
import { startMetricsServer } from '../platform/observability/metrics-server';
import { describeApps } from '../provisioning/apps/app-providers';

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

/**
 * Binds the API's port, answers 503 while the composition root assembles the API's dependencies, then mounts the
 * Express app on them; the retention table's timer runs beside it.
 */
export async function startApi(
  config: AppConfig,
  context: Pick<ServiceContext, 'db' | 'http' | 'apps' | 'dataProtection' | 'sourceDataProtection' | 'clients'>,
  temporal: Client,
): Promise<RunningApi> {
  if (config.Auth.AdminApiKeys.length === 0)
    logger.warn('api: Auth:AdminApiKeys is empty, so every admin request is refused');
  await purgeAtStart(context.db);
  // The port is bound first: its number, when 0 was asked for, is part of the default public URL the routes build on.
  // Until the routes are ready (sign-in set-up reads the store), every request that arrives is answered 503 with
  // Retry-After rather than accepted and left without an answer.
  let handle: RequestListener = startingUp;
  const server = createServer((req, res) => handle(req, res));
  let assembled: AssembledApi | undefined;
  let stopRetention: (() => void) | undefined;
  const close = () => {
    stopRetention?.();
    return closeServer(server).finally(() => assembled?.close());
  };
  try {
    await listen(server, config.Api.Port, config.Api.Host, 'api', 'PORT (or Api:Port)');
    const url = listeningUrl(server, config.Api.Host);
    const publicUrl = config.Api.PublicUrl ?? url;
    assembled = await assembleApi(config, context, temporal, publicUrl);
    const app = createApiApp(assembled.dependencies);
    handle = app;
    stopRetention = startRetention(config, context.db, assembled.dependencies.run);
    await logStarted(assembled, url);
    return { server, app, url, publicUrl, close };
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
}

/** The start-up lines: where the API listens, its documents, the issuer, the apps and where mail goes. */
async function logStarted({ dependencies: { publicUrl, signIn, apps }, mailer }: AssembledApi, url: string) {
  logger.info(`api: listening on ${url} (health: ${url}/healthz)`);
  logger.info(
    `api: API reference ${publicUrl}/docs, OpenAPI document ${publicUrl}/openapi.json, SCIM ${publicUrl}/scim/v2`,
  );
  if (signIn) logger.info(`api: sign-in issuer ${publicUrl} (${publicUrl}/.well-known/openid-configuration)`);
  logger.info(`api: provisioning apps: ${await describeApps(apps)}`);
  logger.info(`api: mail goes to ${mailer.destination}`);
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
