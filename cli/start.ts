import { resolve } from 'node:path';
import { startApi } from '../api/server';
import { listClients } from '../platform/store/clients';
import type { Db } from '../platform/store/database';
import { loadConfig } from '../platform/config/load';
import type { AppConfig } from '../platform/config/config-schema';
import {
  keyRingFromConfig,
  payloadKeyRingFromConfig,
  requireKeyRing,
  requirePayloadKeyRing,
  withEmbeddedKey,
  withEmbeddedPayloadKey,
} from '../platform/config/key-ring';
import { isLoopbackAddress } from '../platform/security/callback-address';
import { startEmbeddedPostgres } from '../dev/embedded-postgres';
import { startHostedMigrationRunner } from '../migration/runner/runner';
import { runMain } from '../composition/process';
import { assertPortFree } from '../platform/net/listen';
import { startDevServer } from '../dev/temporal-dev-server';
import { startWorker } from '../workers/worker';
import { logger } from '../platform/observability/logger';
import { startMetricsServer } from '../platform/observability/metrics-server';
import { installTemporalRuntime } from '../platform/observability/temporal-runtime';

/**
 * The embedded UI opens histories through the API's codec endpoint: its origins may call it, and (everything being on
 * loopback) without a credential, which that UI cannot send. Not when the API listens beyond loopback or on a port
 * chosen at start.
 */
function embeddedCodec(config: AppConfig): { config: AppConfig; endpoint?: string } {
  const loopback = config.Api.Host === 'localhost' || isLoopbackAddress(config.Api.Host);
  if (!loopback || config.Api.Port === 0) return { config };
  const api = config.Api.PublicUrl ?? `http://127.0.0.1:${config.Api.Port}`;
  const origins = ['127.0.0.1', 'localhost'].map((host) => `http://${host}:${config.Temporal.UiPort}`);
  return {
    endpoint: `${api}/codec`,
    config: {
      ...config,
      Temporal: {
        ...config.Temporal,
        CodecCorsOrigins: [...config.Temporal.CodecCorsOrigins, ...origins],
        CodecOpenToLoopback: true,
      },
    },
  };
}

/** The key of the shipped appsettings.json: fine on a laptop, never beyond loopback. */
const SHIPPED_ADMIN_KEY = 'dev-admin-key-change-me';

/** What a newcomer does after the first start: how to call the admin API, and what is not set up yet. */
async function nextSteps(config: AppConfig, db: Db, publicUrl: string): Promise<string[]> {
  const keys = config.Auth.AdminApiKeys;
  const lines = [
    keys.length === 0
      ? 'set Auth:AdminApiKeys (Auth__AdminApiKeys__0) to call the admin API; without a key every admin request is refused'
      : keys.includes(SHIPPED_ADMIN_KEY)
        ? `the admin API takes "Authorization: Bearer ${SHIPPED_ADMIN_KEY}" (the shipped appsettings.json's key; change it before the API is reachable from elsewhere)`
        : 'the admin API takes "Authorization: Bearer <a key of Auth:AdminApiKeys>"',
  ];
  if (Object.keys(config.ProvisioningApps).length === 0 && config.Provisioning.AppProvider === 'Configuration')
    lines.push(
      'no provisioning apps are configured: add them under ProvisioningApps (docs/operations.md, "Configuration")',
    );
  if ((await listClients(db)).length === 0)
    lines.push(
      `no OpenID Connect clients yet: add one with PUT ${publicUrl}/api/v1/clients/{clientId} (docs/sign-in.md); the API reference is at ${publicUrl}/docs`,
    );
  return lines;
}

/** What runs, in start order, each with the words the line at stop names it by. */
type Stops = Array<{ what: string; stop: () => Promise<void> }>;
const log = (line: string) => logger.info(line);

/** The embedded PostgreSQL, and the data-protection key beside its data unless one is configured. */
async function embeddedDatabase(config: AppConfig, dataDir: string, stops: Stops) {
  const keyConfigured = keyRingFromConfig(config) !== undefined;
  const pg = await startEmbeddedPostgres(resolve(dataDir, 'postgres'), config.Embedded.PostgresPort, log);
  stops.push({ what: 'the embedded PostgreSQL', stop: pg.stop });
  log(`postgres: embedded server on 127.0.0.1:${config.Embedded.PostgresPort} (data in ${pg.dataDir})`);
  return { databaseUrl: pg.url, config: keyConfigured ? config : withEmbeddedKey(config, dataDir, log) };
}

/** The Temporal dev server with its UI, and the payload keys beside its data unless they are configured. */
async function embeddedTemporal(config: AppConfig, dataDir: string, stops: Stops) {
  if (payloadKeyRingFromConfig(config) === undefined) config = withEmbeddedPayloadKey(config, dataDir, log);
  const codec = embeddedCodec(config);
  config = codec.config;
  // A port another process holds stops start-up here: another Temporal server there would answer in this one's
  // place (its "ready" taken for ours), and the worker would poll its queue with another database and other keys.
  await assertPortFree(config.Embedded.TemporalPort, '127.0.0.1', 'temporal', 'Embedded:TemporalPort');
  await assertPortFree(config.Temporal.UiPort, '127.0.0.1', 'temporal UI', 'Temporal:UiPort');
  const server = await startDevServer({
    port: config.Embedded.TemporalPort,
    uiPort: config.Temporal.UiPort,
    dbFile: resolve(dataDir, 'temporal.db'),
    namespace: config.Temporal.Namespace,
    uiCodecEndpoint: codec.endpoint,
  });
  stops.push({ what: 'the Temporal dev server', stop: () => server.stop() });
  log(`temporal: dev server on ${server.address}, UI on ${server.uiUrl}`);
  return { temporalAddress: server.address, config };
}

/**
 * `npm start`: the whole service in one process tree. Whatever is not configured runs embedded
 * (PostgreSQL and the Temporal dev server with its UI, both keeping their data under Embedded:DataDir).
 */
runMain('start', async () => {
  let config = loadConfig();
  // What is external needs its keys given; what runs embedded gets keys generated next to its data.
  if (config.Database.Url) requireKeyRing(config);
  if (config.Temporal.Address) requirePayloadKeyRing(config);
  installTemporalRuntime(config);
  const stops: Stops = [];
  // The last started stops first; what stopped is said in one line (composition/process.ts).
  const stopAll = async () => {
    for (const { what, stop } of stops.reverse()) {
      const began = Date.now();
      await stop().catch((error) => logger.error({ err: error }, `start: stopping ${what} failed`));
      logger.debug(`start: ${what} stopped in ${Date.now() - began} ms`);
    }
    return stops.map(({ what }) => what).filter((what) => what !== '');
  };
  try {
    const dataDir = resolve(config.Embedded.DataDir);
    let databaseUrl = config.Database.Url;
    if (!databaseUrl) ({ databaseUrl, config } = await embeddedDatabase(config, dataDir, stops));
    let temporalAddress = config.Temporal.Address;
    if (!temporalAddress) ({ temporalAddress, config } = await embeddedTemporal(config, dataDir, stops));
    const worker = await startWorker(config, temporalAddress, databaseUrl);
    stops.push({ what: 'the worker', stop: worker.stop });
    const api = await startApi(config, worker.context, worker.client);
    stops.push({ what: 'the API', stop: api.close });
    const metrics = await startMetricsServer(config, 'start');
    if (metrics) stops.push({ what: '', stop: metrics.close });
    const runner = startHostedMigrationRunner(config, worker.client, worker.context.db, log);
    stops.push({ what: '', stop: () => Promise.resolve(runner.stop()) });
    log('start: ready; Ctrl-C stops everything');
    for (const line of await nextSteps(config, worker.context.db, api.publicUrl)) log(`start: next: ${line}`);
  } catch (error) {
    await stopAll();
    throw error;
  }
  return stopAll;
});
