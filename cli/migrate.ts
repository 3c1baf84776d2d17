import { readFileSync } from 'node:fs';
import { Connection, type Client } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import { PASSES } from '../migration/activities/plan';
import { ConfigError, loadConfig } from '../platform/config/load';
import { configSchema, type AppConfig } from '../platform/config/config-schema';
import { closestKey, unknownKeyPart } from '../platform/config/known-keys';
import { migrationOptions, startOrAttachMigration } from '../migration/runner/control';
import {
  createSweepSchedule,
  deleteSweepSchedule,
  describeSweepSchedule,
  setSweepSchedulePaused,
} from '../migration/runner/schedule';
import { createServiceContext, migrationDependencies } from '../composition/service-context';
import { temporalClient, withEphemeralPayloadKey } from '../platform/temporal/data-converter';
import { importSigningKey } from '../platform/store/signing-keys';
import { PfxError } from '../platform/security/pkcs12';
import { SigningKeyError } from '../platform/security/signing-key-material';
import {
  KEY_FILE,
  keyRingFromConfig,
  PAYLOAD_KEY_FILE,
  payloadKeyRingFromConfig,
  requireKeyRing,
  requirePayloadKeyRing,
  withEmbeddedKey,
  withEmbeddedPayloadKey,
} from '../platform/config/key-ring';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { assertPortFree } from '../platform/net/listen';
import { flushLogs } from '../platform/observability/logger';
import { freePort } from '../dev/ports';
import { startDevServer } from '../dev/temporal-dev-server';
import { parseSourceConnectionString } from '../migration/source/connection';
import { sourceTableTotals } from '../migration/source/totals';
import { createDb, migrateToLatest } from '../platform/store/database';
import { createMigrationWorker, workerHome } from '../workers/create-worker';
import { followProgress, printReport } from './migration-progress';

const USAGE = `Usage: npm run migrate -- [command] [options]
  (from a container image: docker run IMAGE [command] [options], without "--")

Commands:
  run (default)                     copy the source into the target stores, or validate it with --DryRun true
  schedule create --Every 24h       scheduled CreateOnly delta sweeps (or --Cron "0 3 * * *"); needs TEMPORAL_ADDRESS
  schedule list | pause | unpause | delete
  import-signing-key --File key.pfx|key.pem|key.json [--Password p] [--Kid id]
                                    import a static signing key of the source (PFX, PEM or JWK; RSA or EC)

Options (the Migration section's names; --Migration:Name works too):
  --Source:ConnectionString <SOURCE_CONNECTION_STRING>   SQL Server (Server=…) or PostgreSQL (Host=… or postgres://…)
  --Target:ConnectionString <TARGET_CONNECTION_STRING>   the service's PostgreSQL (default: DATABASE_URL)
  --DryRun true|false   --UsersMode CreateOnly|Upsert   --Version <marker>   --MigrateClients true|false
  --MigrateRefreshTokens true|false   --SourceGrantKeysAreUnhashed true|false   --PageSize <users>   --Parallelism <ranges>
  --SourceDataProtection:ApplicationName <the source's application name>   --SourceDataProtection:KeyRingPath <folder>
  --MigrateSigningKeys true|false   --SourceSigningKeys:KeyPath <the source's FileSystemKeyStore folder>

Without TEMPORAL_ADDRESS the tool starts its own Temporal dev server and worker; with it, the run is submitted to
that cluster, whose migration workers need the source connection string in their own configuration.`;

const MIGRATION_NAMES = Object.keys(configSchema.shape.Migration.unwrap().shape);
const MIGRATION_KEYS = MIGRATION_NAMES.map((k) => k.toLowerCase());
const OWN_FLAGS = ['Every', 'Cron', 'File', 'Kid', 'Password'];

/**
 * An option the configuration does not read is refused, naming the closest known one: a misspelt option would
 * otherwise be dropped in silence and the run go on without it. `key` is the option as typed, `path` its key in the
 * configuration (`Migration:` added to a bare Migration option).
 */
function refuseUnknown(key: string, path: string): void {
  const unknown = unknownKeyPart(path);
  if (!unknown) return;
  const typed = key.split(':');
  const offset = typed.length - path.split(':').length;
  const at = Math.max(unknown.index + offset, 0);
  // A bare option (`--DryRn`) may be meant as any section or any Migration option.
  const known = unknown.index === 0 ? [...unknown.known, ...MIGRATION_NAMES, ...OWN_FLAGS] : unknown.known;
  const closest = [...typed.slice(0, at), closestKey(typed[at], known)].join(':');
  throw new ConfigError(`unknown option --${key}; did you mean --${closest}? (npm run migrate -- --help lists them)`);
}

/** The spec's flags have no section (`--DryRun true`); they belong to the Migration section. */
function normalizeFlags(argv: string[]): { flags: string[]; positional: string[]; own: Record<string, string> } {
  const flags: string[] = [];
  const positional: string[] = [];
  const own: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const [rawKey, inline] = arg.slice(2).split(/=(.*)/s, 2);
    const value = inline ?? argv[++i];
    if (value === undefined) throw new ConfigError(`flag ${arg} has no value`);
    const root = rawKey.split(':')[0].toLowerCase();
    if (OWN_FLAGS.some((f) => f.toLowerCase() === rawKey.toLowerCase())) own[rawKey.toLowerCase()] = value;
    else {
      const path = MIGRATION_KEYS.includes(root) ? `Migration:${rawKey}` : rawKey;
      refuseUnknown(rawKey, path);
      flags.push(`--${path}`, value);
    }
  }
  return { flags, positional, own };
}

function targetUrl(config: AppConfig): string {
  const target = config.Migration.Target.ConnectionString;
  if (target) {
    const parsed = parseSourceConnectionString(target);
    if (parsed.kind !== 'postgres')
      throw new ConfigError("Target:ConnectionString must point to the service's PostgreSQL store");
    return parsed.url!;
  }
  if (config.Database.Url) return config.Database.Url;
  throw new ConfigError("set --Target:ConnectionString (or DATABASE_URL) to the service's PostgreSQL store");
}

async function connectClient(config: AppConfig): Promise<{ client: Client; close: () => Promise<void> }> {
  if (!config.Temporal.Address) throw new ConfigError('schedules live in a Temporal cluster: set TEMPORAL_ADDRESS');
  const connection = await Connection.connect({ address: config.Temporal.Address });
  return { client: temporalClient(connection, config), close: () => connection.close() };
}

/**
 * In the checkout of an `npm start` (its generated key beside its data), what is not configured is start's: its
 * embedded PostgreSQL as the target, with its data-protection key; and, while start runs, its Temporal server with its
 * payload key, where the run shows in start's UI (on a task queue of this CLI's own worker, since start's worker
 * has no source connection string). `ownWorker`: this process runs the migration worker.
 */
async function withStartDefaults(config: AppConfig): Promise<{ config: AppConfig; ownWorker: boolean }> {
  const dataDir = resolve(config.Embedded.DataDir);
  const quiet = () => undefined;
  if (!existsSync(resolve(dataDir, KEY_FILE))) return { config, ownWorker: !config.Temporal.Address };
  if (!config.Migration.Target.ConnectionString && !config.Database.Url) {
    const pgPort = config.Embedded.PostgresPort;
    if (!(await portHeld(pgPort)))
      throw new ConfigError(
        `the target is this checkout's embedded PostgreSQL (127.0.0.1:${pgPort}), which runs only while \`npm start\` does: start it first, or give --Target:ConnectionString`,
      );
    const url = `postgres://postgres:postgres@127.0.0.1:${pgPort}/identity`;
    config = { ...config, Database: { ...config.Database, Url: url } };
    if (!keyRingFromConfig(config)) config = withEmbeddedKey(config, dataDir, quiet);
  }
  const port = config.Embedded.TemporalPort;
  const startRuns = (await portHeld(port)) && existsSync(resolve(dataDir, PAYLOAD_KEY_FILE));
  if (config.Temporal.Address || !startRuns) return { config, ownWorker: !config.Temporal.Address };
  if (!payloadKeyRingFromConfig(config)) config = withEmbeddedPayloadKey(config, dataDir, quiet);
  const Temporal = {
    ...config.Temporal,
    Address: `127.0.0.1:${port}`,
    MigrationTaskQueue: `migration-cli-${process.pid}`,
  };
  console.log(`temporal: the running \`npm start\`'s server at ${Temporal.Address} (its UI shows the run)`);
  return { config: { ...config, Temporal }, ownWorker: true };
}

/** Whether a process listens on this loopback port (start's embedded servers, while start runs). */
const portHeld = (port: number) =>
  assertPortFree(port, '127.0.0.1', 'probe', 'probe').then(
    () => false,
    () => true,
  );

/** Where the run writes, without the password. */
function describeTarget(url: string): string {
  const parsed = new URL(url);
  return `${parsed.hostname}:${parsed.port || 5432}${parsed.pathname}`;
}

async function run(config: AppConfig): Promise<number> {
  if (!config.Migration.Source.ConnectionString && !config.Temporal.Address)
    throw new ConfigError('set --Source:ConnectionString <SOURCE_CONNECTION_STRING>');
  let ownWorker: boolean;
  ({ config, ownWorker } = await withStartDefaults(config));
  // A cluster's histories outlive the run and need the service's payload keys; the CLI's own server dies with it.
  if (!config.Temporal.Address) config = withEphemeralPayloadKey(config);
  else requirePayloadKeyRing(config);
  const stops: Array<() => Promise<void>> = [];
  try {
    // The target store (migrated to the current schema) and, when given, the source: one context for the whole run.
    const target = targetUrl(config);
    console.log(`target: ${describeTarget(target)}`);
    const context = await createServiceContext(config, target);
    stops.push(context.close);
    let client: Client;
    if (!ownWorker) {
      ({ client } = await connectClient(config));
      stops.push(() => client.connection.close());
    } else {
      // The report is the output; the worker's routine chatter would bury it.
      Runtime.install({ logger: new DefaultLogger('ERROR') });
      const server = config.Temporal.Address
        ? { address: config.Temporal.Address }
        : await startDevServer({ port: await freePort(), readyTimeoutMs: 120_000 });
      if ('stop' in server) stops.push(server.stop);
      const connection = await NativeConnection.connect({ address: server.address });
      stops.push(() => connection.close());
      const worker: Worker = await createMigrationWorker(
        workerHome(connection, config),
        migrationDependencies(context),
      );
      const running = worker.run();
      stops.push(async () => {
        worker.shutdown();
        await running;
      });
      client = temporalClient(connection, config);
    }
    const options = migrationOptions(config);
    const totals = await sourceTableTotals(context.source);
    const handle = await startOrAttachMigration(client, config, options);
    console.log(
      `migration ${handle.workflowId}: ${options.dryRun ? 'dry run' : options.usersMode}, passes ${PASSES.join(', ')}`,
    );
    const stopProgress = followProgress(context.db, options.version, totals, options.dryRun);
    const report = await handle.result().finally(stopProgress);
    printReport(report);
    return report.state === 'Failed' ? 1 : 0;
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  }
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(USAGE);
    return 0;
  }
  const { flags, positional, own } = normalizeFlags(argv);
  const config = loadConfig({ argv: flags });
  const [command = 'run', sub] = positional;
  switch (command) {
    case 'run':
      return run(config);
    case 'import-signing-key': {
      if (!own.file) throw new ConfigError('import-signing-key needs --File <path to a PFX, PEM or JWK file>');
      const ring = requireKeyRing(config, 'import-signing-key seals the key at rest');
      const db = createDb(targetUrl(config), 1);
      try {
        await migrateToLatest(db);
        const result = await importSigningKey(db, ring, readFileSync(own.file), own.kid, own.password).catch(
          (error: unknown) => {
            // A file that is not a usable key is the operator's to fix: its reason, without a stack.
            if (error instanceof PfxError || error instanceof SigningKeyError)
              throw new ConfigError(`${own.file} cannot be imported: ${error.message}`);
            throw error;
          },
        );
        console.log(
          result.imported
            ? `signing key ${result.kid} (${result.alg}) imported`
            : `signing key ${result.kid} was already imported`,
        );
        return 0;
      } finally {
        await db.destroy();
      }
    }
    case 'schedule': {
      const { client, close } = await connectClient(config);
      try {
        if (sub === 'create') {
          if (!own.every && !own.cron)
            throw new ConfigError('schedule create needs --Every <interval, e.g. 24h> or --Cron "<expression>"');
          await createSweepSchedule(client, config, own.every ? { every: own.every } : { cron: own.cron });
          console.log('delta-sweep schedule created');
        } else if (sub === 'list')
          console.log(JSON.stringify((await describeSweepSchedule(client)) ?? 'no delta-sweep schedule', null, 2));
        else if (sub === 'pause' || sub === 'unpause') {
          await setSweepSchedulePaused(client, sub === 'pause');
          console.log(`delta-sweep schedule ${sub}d`);
        } else if (sub === 'delete') {
          await deleteSweepSchedule(client);
          console.log('delta-sweep schedule deleted');
        } else
          throw new ConfigError(
            `unknown schedule command ${sub ?? '(none)'}; use create, list, pause, unpause or delete`,
          );
        return 0;
      } finally {
        await close();
      }
    }
    default:
      throw new ConfigError(`unknown command ${command}\n\n${USAGE}`);
  }
}

// What the store and the SDK logged goes out before the exit (flushLogs: a write under way is not lost).
void main()
  .catch((error) => {
    console.error(
      `migrate: ${error instanceof Error && !(error instanceof ConfigError) ? (error.stack ?? error.message) : (error as Error).message}`,
    );
    return 1;
  })
  .then((code) => flushLogs().then(() => process.exit(code)));
