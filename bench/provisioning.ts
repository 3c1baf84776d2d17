import { randomBytes, randomUUID } from 'node:crypto';
import { NativeConnection, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { createScratchDatabase } from '../test/fixtures/source/generate';
import { startApi } from '../api/server';
import { parseConfig } from '../platform/config/load';
import { startDownstreamApp } from '../examples/downstream-app/app';
import { startDevServer } from '../dev/temporal-dev-server';
import { freePort } from '../dev/ports';
import { startWorker } from '../workers/worker';
import { createWorkflowRunner } from '../provisioning/workflow-runner';
import { FAILURE_CONVERTER_PATH, temporalDataConverter } from '../platform/temporal/data-converter';
import { PROVISIONING_WORKER_LIMITS } from '../workers/create-worker';
import { oneStep } from './workflows/one-step';
import {
  BENCH_ADMIN_URL,
  cpuSeconds,
  loadSamples,
  numberArg,
  report,
  runBenchmark,
  runLoad,
  summarize,
  type LoadResult,
  type LoadSamples,
} from './stats';
import { installTemporalRuntime } from '../platform/observability/temporal-runtime';

/** The processes besides this one whose CPU time a creation costs: the Temporal dev server and PostgreSQL's backends. */
const OTHER_PROCESSES = ['temporal', 'postgres'];

/**
 * `npm run bench:provisioning [-- --users 500 --concurrency 16 --serial 100]`: user creations through the HTTP API
 * (API + worker in this process, as `npm start` runs them) against three loopback apps that approve at once, and in
 * the same run two baselines:
 *  - one-step: a bare workflow on the same dev server, worker settings and data converter, started and awaited as the
 *    API does, whose one local activity does nothing (the least one durable workflow per attempt costs here);
 *  - direct: the same Try/Confirm calls made without Temporal.
 * Each runs `--users` times at `--concurrency`, and `--serial` times one at a time (the single-request latency), in
 * `--rounds` interleaved rounds. CPU time per creation is reported for this process (API, worker, apps, load
 * generator), the Temporal dev server and PostgreSQL.
 * Results are JSON lines on standard error, the last with the ratios the targets are set in; the service's own log lines
 * go to standard output as `npm start` writes them (`> /dev/null` keeps only the results).
 */
async function main(): Promise<void> {
  const users = numberArg('users', 500);
  const concurrency = numberArg('concurrency', 16);
  const serial = numberArg('serial', 100);
  const rounds = numberArg('rounds', 3);
  const database = await createScratchDatabase(BENCH_ADMIN_URL, 'ips_bench');

  const temporalServer = await startDevServer({ port: await freePort(), readyTimeoutMs: 120_000 });
  const apps = await Promise.all(
    ['crm', 'billing', 'wiki'].map(async (id) => ({
      id,
      key: `bench-${id}`,
      app: await startDownstreamApp({ apiKey: `bench-${id}` }),
    })),
  );
  const config = parseConfig({
    ProvisioningApps: Object.fromEntries(apps.map(({ id, key, app }) => [id, { CallbackUrl: app.url, ApiKey: key }])),
    Auth: { AllowedInternalTargets: ['127.0.0.1'], AdminApiKeys: ['bench-admin'] },
    Api: { Port: 0 },
    Temporal: { PayloadKeys: [{ Id: 'bench', Key: randomBytes(32).toString('base64') }] },
  });
  installTemporalRuntime(config);
  const worker = await startWorker(config, temporalServer.address, database.url);
  const api = await startApi(config, worker.context, worker.client);

  const create = async (i: number) => {
    const res = await fetch(`${api.url}/api/v1/profile/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer bench-admin' },
      body: JSON.stringify({ email: `bench-${i}-${randomUUID().slice(0, 8)}@example.test`, firstName: 'Bench' }),
    });
    const body = await res.text();
    return res.status === 201 || `HTTP ${res.status}: ${body.slice(0, 200)}`;
  };

  // The one-step baseline's own worker on a queue of its own, polling beside the service's worker.
  const oneStepQueue = 'bench-one-step';
  const oneStepConnection = await NativeConnection.connect({ address: temporalServer.address });
  const oneStepWorker = await Worker.create({
    connection: oneStepConnection,
    namespace: config.Temporal.Namespace,
    taskQueue: oneStepQueue,
    dataConverter: temporalDataConverter(config),
    workflowBundle: await bundleWorkflowCode({
      workflowsPath: require.resolve('./workflows/one-step'),
      failureConverterPath: FAILURE_CONVERTER_PATH,
      logger: { info() {}, warn() {}, error() {}, debug() {}, trace() {}, log() {} },
    }),
    activities: { nothing: async () => {} },
    ...PROVISIONING_WORKER_LIMITS,
  });
  const oneStepRunning = oneStepWorker.run();
  const runOneStep = createWorkflowRunner(worker.client, oneStepQueue, config.Api.ResultTimeoutSeconds);
  const bare = async (i: number) => {
    const result = await runOneStep(oneStep, {
      workflowId: `bench-one-step-${i}-${randomUUID()}`,
      args: [{ user: { email: `bench-${i}@example.test`, firstName: 'Bench' } }],
      search: { userId: randomUUID(), trigger: 'admin-api' },
    });
    return result.status === 'provisioned' || result.status;
  };

  const appList = await worker.context.apps.listApps({ userId: 'bench', organizationId: null });
  const direct = async () => {
    const transactionId = randomUUID();
    const user = {
      transactionId,
      userId: randomUUID(),
      email: `direct-${transactionId}@example.test`,
      firstName: 'Bench',
    };
    for (const app of appList) {
      const verdict = await worker.context.http.try(app, user);
      if (!verdict.approved) return verdict.reason;
    }
    try {
      for (const app of appList) await worker.context.http.confirm(app, transactionId);
    } catch (error) {
      return `Confirm ${(error as Error).message}`;
    }
    return true;
  };

  // `--only <variant>` measures one (for a CPU profile of it alone).
  const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
  const variants = Object.entries({
    'http-api-temporal': create,
    'baseline-one-step-workflow': bare,
    'baseline-direct-tcc-calls': direct,
  }).filter(([variant]) => only === undefined || variant === only);
  for (const [, task] of variants) await runLoad(Math.min(50, users), concurrency, task);

  // Interleaved rounds, so a machine that speeds up or slows down during the run weighs on every variant alike.
  const samples = new Map<string, { concurrent: LoadSamples[]; serial: LoadSamples[]; cpu: Record<string, number> }>(
    variants.map(([variant]) => [variant, { concurrent: [], serial: [], cpu: {} }]),
  );
  let next = 0;
  for (let round = 0; round < rounds; round++) {
    for (const [variant, task] of variants) {
      const seen = samples.get(variant)!;
      const before = cpuSeconds(OTHER_PROCESSES);
      seen.concurrent.push(await loadSamples(Math.ceil(users / rounds), concurrency, task, next));
      const after = cpuSeconds(OTHER_PROCESSES);
      for (const part of Object.keys(after)) seen.cpu[part] = (seen.cpu[part] ?? 0) + after[part] - before[part];
      next += users;
      seen.serial.push(await loadSamples(Math.ceil(serial / rounds), 1, task, next));
      next += serial;
    }
  }
  const results: Record<string, { concurrent: LoadResult; serial: LoadResult }> = {};
  for (const [variant, seen] of samples) {
    const concurrent = summarize(seen.concurrent);
    const oneByOne = summarize(seen.serial);
    results[variant] = { concurrent, serial: oneByOne };
    const cpuMsPerOperation = Object.fromEntries(
      Object.entries(seen.cpu).map(([part, seconds]) => [part, Math.round((seconds * 10_000) / concurrent.count) / 10]),
    );
    report({ bench: 'provisioning', variant, concurrency, ...concurrent, cpuMsPerOperation });
    report({ bench: 'provisioning', variant, concurrency: 1, ...oneByOne });
  }

  if (only === undefined) reportRatios(results);

  await api.close();
  oneStepWorker.shutdown();
  await oneStepRunning;
  await oneStepConnection.close();
  await worker.stop();
  await Promise.all(apps.map(({ app }) => app.close()));
  await temporalServer.stop();
  await database.drop();
}

/** The service against the one-step ceiling (the targets) and against direct calls. */
function reportRatios(results: Record<string, { concurrent: LoadResult; serial: LoadResult }>): void {
  const ours = results['http-api-temporal'];
  const ceiling = results['baseline-one-step-workflow'];
  const direct = results['baseline-direct-tcc-calls'];
  const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
  const throughputOfCeiling = ratio(ours.concurrent.perSecond, ceiling.concurrent.perSecond);
  const p50OfCeiling = ratio(ours.serial.p50, ceiling.serial.p50);
  const failures = Object.values(results).reduce((n, r) => n + r.concurrent.failures + r.serial.failures, 0);
  report({
    bench: 'provisioning',
    ratios: {
      throughputOfOneStep: throughputOfCeiling,
      p50OverOneStep: p50OfCeiling,
      throughputOfDirect: ratio(ours.concurrent.perSecond, direct.concurrent.perSecond),
      p50OverDirect: ratio(ours.serial.p50, direct.serial.p50),
    },
    targets: {
      throughputOfOneStep: '>= 0.5',
      p50OverOneStep: '<= 2',
      met: throughputOfCeiling >= 0.5 && p50OfCeiling <= 2 && failures === 0,
    },
    failures,
  });
}

runBenchmark(main);
