import { randomBytes, randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { NativeConnection, Worker, bundleWorkflowCode } from '@temporalio/worker';
import { createScratchDatabase } from '../test/fixtures/source/generate';
import { startApi } from '../api/server';
import { parseConfig } from '../platform/config/load';
import type { AppConfig } from '../platform/config/config-schema';
import { startDownstreamApp } from '../examples/downstream-app/app';
import { startDevServer } from '../dev/temporal-dev-server';
import { freePort } from '../dev/ports';
import { startWorker } from '../workers/worker';
import { createServiceContext, type ServiceContext } from '../composition/service-context';
import { createWorkflowRunner } from '../provisioning/workflow-runner';
import { FAILURE_CONVERTER_PATH, temporalClient, temporalDataConverter } from '../platform/temporal/data-converter';
import { PROVISIONING_WORKER_LIMITS } from '../workers/create-worker';
import { oneStep } from './workflows/one-step';
import { startServiceInstances, type ServiceInstances } from './service-instances';
import {
  BENCH_ADMIN_URL,
  childrenNamed,
  cpuSpent,
  readCpu,
  loadSamples,
  numberArg,
  report,
  runBenchmark,
  runLoad,
  summarize,
  type LoadResult,
  type LoadSamples,
  type CpuReading,
  type TaskResult,
} from './stats';
import { installTemporalRuntime } from '../platform/observability/temporal-runtime';

/** The targets, against the one-step workflow: throughput at `--concurrency`, p50 one at a time. */
const TARGETS = { throughputOfOneStep: 0.7, p50OverOneStep: 1.5 };

const SERVICE = 'http-api-temporal';
const ONE_STEP = 'baseline-one-step-workflow';
const DIRECT = 'baseline-direct-tcc-calls';

type Task = (i: number) => Promise<TaskResult>;

/** A variant's samples over the rounds, and the CPU seconds each part spent during its concurrent runs. */
type Seen = { concurrent: LoadSamples[]; serial: LoadSamples[]; cpu: Record<string, number> };

/** What the service, the baselines and the processes they run in need, and how to stop them all. */
interface Setup {
  variants: Array<[string, Task]>;
  /**
   * The processes besides this one whose CPU time a creation costs, as a reading finds them: the Temporal dev server,
   * PostgreSQL's backends of this run's database, the service processes of `--instances`.
   */
  processes: (reading: CpuReading) => Promise<Record<string, number[]>>;
  stop: () => Promise<void>;
}

/**
 * `npm run bench:provisioning [-- --users 500 --concurrency 16 --serial 100 --rounds 3 --instances 2]`: user
 * creations through the HTTP API against three loopback apps that approve at once, and in the same run two baselines:
 *  - one-step: a bare workflow on the same dev server, worker settings and data converter, started and awaited as the
 *    API does, whose one local activity does nothing (the least one durable workflow per attempt costs here);
 *  - direct: the same Try/Confirm calls made without Temporal.
 * By default the service runs in this process (API + worker, as `npm start` runs them). With `--instances N` it runs
 * instead as service processes of their own (`npm start` over this run's database and Temporal server) behind a
 * round-robin proxy: one instance, and N instances polling one task queue, measured side by side.
 * Each variant runs `--users` times at `--concurrency`, and `--serial` times one at a time (the single-request
 * latency), in `--rounds` interleaved rounds. CPU time per creation is reported for this process (load generator,
 * apps, baselines, and the in-process service), the service processes, the Temporal dev server and PostgreSQL.
 * Results are JSON lines on standard error, the last with the ratios the targets are set in; the service's own log lines
 * go to standard output as `npm start` writes them (`> /dev/null` keeps only the results).
 */
async function main(): Promise<void> {
  const users = numberArg('users', 500);
  const concurrency = numberArg('concurrency', 16);
  const serial = numberArg('serial', 100);
  const rounds = numberArg('rounds', 3);
  const instances = numberArg('instances', 0);
  const setup = await startVariants(instances);
  // `--only <variant>[,<variant>…]` measures those alone (one for a CPU profile of it, two to compare them).
  const only = process.argv.includes('--only')
    ? process.argv[process.argv.indexOf('--only') + 1].split(',')
    : undefined;
  const variants = setup.variants.filter(([variant]) => only === undefined || only.includes(variant));
  for (const [, task] of variants) await runLoad(Math.min(50, users), concurrency, task);

  // Interleaved rounds, so a machine that speeds up or slows down during the run weighs on every variant alike.
  const samples = new Map<string, Seen>(
    variants.map(([variant]) => [variant, { concurrent: [], serial: [], cpu: {} }]),
  );
  let next = 0;
  for (let round = 0; round < rounds; round++) {
    for (const [variant, task] of variants) {
      const seen = samples.get(variant)!;
      const before = readCpu();
      seen.concurrent.push(await loadSamples(Math.ceil(users / rounds), concurrency, task, next));
      const after = readCpu();
      const spent = cpuSpent(before, after, await setup.processes(after));
      for (const part of Object.keys(spent)) seen.cpu[part] = (seen.cpu[part] ?? 0) + spent[part];
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
  reportRatios(results);
  await setup.stop();
}

/** The apps, the Temporal dev server, a scratch database, then the service as asked and the two baselines. */
async function startVariants(instances: number): Promise<Setup> {
  const database = await createScratchDatabase(BENCH_ADMIN_URL, 'ips_bench');
  const temporalServer = await startDevServer({ port: await freePort(), readyTimeoutMs: 120_000 });
  const apps = await Promise.all(
    ['crm', 'billing', 'wiki'].map(async (id) => ({
      id,
      key: `bench-${id}`,
      app: await startDownstreamApp({ apiKey: `bench-${id}` }),
    })),
  );
  const settings = {
    ProvisioningApps: Object.fromEntries(apps.map(({ id, key, app }) => [id, { CallbackUrl: app.url, ApiKey: key }])),
    Auth: { AllowedInternalTargets: ['127.0.0.1'], AdminApiKeys: ['bench-admin'] },
    Api: { Port: 0 },
    Temporal: { PayloadKeys: [{ Id: 'bench', Key: randomBytes(32).toString('base64') }] },
    DataProtection: { Keys: [{ Id: 'bench', Key: randomBytes(32).toString('base64') }] },
  };
  const config = parseConfig(settings);
  installTemporalRuntime(config);
  const stops: Array<() => Promise<unknown>> = [
    () => database.drop(),
    () => temporalServer.stop(),
    () => Promise.all(apps.map(({ app }) => app.close())),
  ];
  const shared = { databaseUrl: database.url, temporalAddress: temporalServer.address };
  const backends = new Client({ connectionString: database.url });
  try {
    await backends.connect();
    stops.push(() => backends.end());
    const service =
      instances > 0 ? await serviceProcesses(instances, settings, shared) : await inProcess(config, shared);
    stops.push(service.stop);
    const oneStepBaseline = await startOneStep(config, temporalServer.address);
    stops.push(oneStepBaseline.stop);
    return {
      variants: [...service.variants, [ONE_STEP, oneStepBaseline.task], [DIRECT, await directCalls(service.context)]],
      processes: async (reading) => ({
        temporal: childrenNamed(reading, 'temporal'),
        postgres: (
          await backends.query<{ pid: number }>('select pid from pg_stat_activity where datname = current_database()')
        ).rows.map((row) => row.pid),
        ...service.processes,
      }),
      stop: async () => {
        for (const stop of stops.reverse()) await stop();
      },
    };
  } catch (error) {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    throw error;
  }
}

/** The service's variants, the store context the direct calls use, and how to stop them. */
interface Service {
  variants: Array<[string, Task]>;
  context: ServiceContext;
  processes: Record<string, number[]>;
  stop: () => Promise<void>;
}

/** API and worker in this process, as `npm start` runs them. */
async function inProcess(
  config: AppConfig,
  { databaseUrl, temporalAddress }: { databaseUrl: string; temporalAddress: string },
): Promise<Service> {
  const worker = await startWorker(config, temporalAddress, databaseUrl);
  const api = await startApi(config, worker.context, worker.client);
  return {
    variants: [[SERVICE, creationsThrough(api.url)]],
    context: worker.context,
    processes: {},
    stop: async () => {
      await api.close();
      await worker.stop();
    },
  };
}

/**
 * One service process, and `count` of them polling one task queue, each group behind a round-robin proxy of its own.
 * The groups poll different task queues, so a creation sent to one group runs in that group alone.
 */
async function serviceProcesses(
  count: number,
  settings: Record<string, unknown> & { Temporal: object },
  shared: { databaseUrl: string; temporalAddress: string },
): Promise<Service> {
  const groups: Array<[string, ServiceInstances]> = [];
  const stop = async () => {
    for (const [, group] of groups) await group.stop();
  };
  try {
    for (const n of count > 1 ? [1, count] : [1]) {
      const queue = { ...settings.Temporal, TaskQueue: `bench-provisioning-${n}` };
      const name = `${SERVICE}-${n}-${n === 1 ? 'instance' : 'instances'}`;
      groups.push([name, await startServiceInstances(n, { ...settings, Temporal: queue }, shared)]);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  // The direct calls' TCC client and apps, on a store connection of this process's own.
  const context = await createServiceContext(parseConfig(settings), shared.databaseUrl);
  return {
    variants: groups.map(([name, group]) => [name, creationsThrough(group.url)]),
    context,
    processes: Object.fromEntries(groups.map(([name, group]) => [`${name} processes`, group.pids])),
    stop: async () => {
      for (const [name, group] of groups)
        if (group.proxy.errors > 0) report({ bench: 'provisioning', variant: name, proxyErrors: group.proxy.errors });
      await stop();
      await context.close();
    },
  };
}

/** A user creation through the HTTP API at `url`: true when it answered 201. */
function creationsThrough(url: string): Task {
  return async (i: number) => {
    const res = await fetch(`${url}/api/v1/profile/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer bench-admin' },
      body: JSON.stringify({ email: `bench-${i}-${randomUUID().slice(0, 8)}@example.test`, firstName: 'Bench' }),
    });
    const body = await res.text();
    return res.status === 201 || `HTTP ${res.status}: ${body.slice(0, 200)}`;
  };
}

/** The one-step baseline's own worker on a queue of its own, and a run of it started and awaited as the API does. */
async function startOneStep(config: AppConfig, temporalAddress: string) {
  const oneStepQueue = 'bench-one-step';
  const connection = await NativeConnection.connect({ address: temporalAddress });
  const worker = await Worker.create({
    connection,
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
  const running = worker.run();
  const runOneStep = createWorkflowRunner(
    temporalClient(connection, config),
    oneStepQueue,
    config.Api.ResultTimeoutSeconds,
  );
  const task: Task = async (i: number) => {
    const result = await runOneStep(oneStep, {
      workflowId: `bench-one-step-${i}-${randomUUID()}`,
      args: [{ user: { email: `bench-${i}@example.test`, firstName: 'Bench' } }],
      search: { userId: randomUUID(), trigger: 'admin-api' },
    });
    return result.status === 'provisioned' || result.status;
  };
  return {
    task,
    stop: async () => {
      worker.shutdown();
      await running;
      await connection.close();
    },
  };
}

/** The same Try and Confirm calls as a creation, made with the service's own TCC client and no Temporal. */
async function directCalls(context: ServiceContext): Promise<Task> {
  const appList = await context.apps.listApps({ userId: 'bench', organizationId: null });
  return async () => {
    const transactionId = randomUUID();
    const user = {
      transactionId,
      userId: randomUUID(),
      email: `direct-${transactionId}@example.test`,
      firstName: 'Bench',
    };
    for (const app of appList) {
      const verdict = await context.http.try(app, user);
      if (!verdict.approved) return verdict.reason;
    }
    try {
      for (const app of appList) await context.http.confirm(app, transactionId);
    } catch (error) {
      return `Confirm ${(error as Error).message}`;
    }
    return true;
  };
}

/** Each service variant against the one-step ceiling (the targets) and against direct calls. */
function reportRatios(results: Record<string, { concurrent: LoadResult; serial: LoadResult }>): void {
  const ceiling = results[ONE_STEP];
  const direct = results[DIRECT];
  if (!ceiling) return;
  const oneInstance = results[`${SERVICE}-1-instance`];
  const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
  const failures = Object.values(results).reduce((n, r) => n + r.concurrent.failures + r.serial.failures, 0);
  for (const [variant, ours] of Object.entries(results).filter(([name]) => name.startsWith(SERVICE))) {
    const throughputOfOneStep = ratio(ours.concurrent.perSecond, ceiling.concurrent.perSecond);
    const p50OverOneStep = ratio(ours.serial.p50, ceiling.serial.p50);
    report({
      bench: 'provisioning',
      variant,
      ratios: {
        throughputOfOneStep,
        p50OverOneStep,
        ...(direct && {
          throughputOfDirect: ratio(ours.concurrent.perSecond, direct.concurrent.perSecond),
          p50OverDirect: ratio(ours.serial.p50, direct.serial.p50),
        }),
        ...(oneInstance &&
          ours !== oneInstance && {
            throughputOfOneInstance: ratio(ours.concurrent.perSecond, oneInstance.concurrent.perSecond),
            p50OverOneInstance: ratio(ours.serial.p50, oneInstance.serial.p50),
          }),
      },
      targets: {
        throughputOfOneStep: `>= ${TARGETS.throughputOfOneStep}`,
        p50OverOneStep: `<= ${TARGETS.p50OverOneStep}`,
        met:
          throughputOfOneStep >= TARGETS.throughputOfOneStep &&
          p50OverOneStep <= TARGETS.p50OverOneStep &&
          failures === 0,
      },
      failures,
    });
  }
}

runBenchmark(main);
