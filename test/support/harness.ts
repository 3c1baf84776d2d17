import { randomUUID } from 'node:crypto';
import type { LookupFunction } from 'node:net';
import type { Client } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { startApi, type RunningApi } from '../../api/server';
import { parseConfig } from '../../platform/config/load';
import type { AppConfig } from '../../platform/config/config-schema';
import { startDownstreamApp, type Behaviour, type RunningDownstreamApp } from '../../examples/downstream-app/app';
import { createScratchDatabase } from '../fixtures/source/generate';
import {
  createServiceContext,
  type ServiceContext,
  type ServiceContextOptions,
  migrationDependencies,
} from '../../composition/service-context';
import { createMigrationWorker, createProvisioningWorker, workerHome } from '../../workers/create-worker';
import { temporalClient } from '../../platform/temporal/data-converter';
import { TEST_ADMIN_URL } from './scratch-store';
import { answerProblem } from './openapi-check';
import type { ServiceProcess } from './service-process';

export const ADMIN_KEY = 'test-admin-key';

export interface AppSpec {
  behaviour?: Behaviour;
  tryTimeoutSeconds?: number;
  /** Where the app listens; 127.0.0.1 unless a test needs another loopback address. */
  listenHost?: string;
  /** How the service addresses the app, when not by the listening address. */
  callbackHost?: string;
}

export interface HarnessOptions {
  apps: Record<string, AppSpec>;
  allowedInternalTargets?: string[];
  dnsLookup?: LookupFunction;
  /** Extra configuration sections, merged over the harness's own. */
  config?: Record<string, Record<string, unknown>>;
  appProvider?: ServiceContextOptions['appProvider'];
  /** Also run a migration worker (its own task queue) against this source, writing into a database of its own. */
  migrationSource?: string;
  /** A database of its own, for a test that counts what every test file adds to, or names things as others do. */
  ownDatabase?: boolean;
}

export const TEST_DATA_PROTECTION_KEY = Buffer.alloc(32, 7).toString('base64');
/** Temporal:PayloadKeys of every test service: histories in the run's dev server are sealed as in production. */
export const TEST_PAYLOAD_KEYS = [{ Id: 'test', Key: Buffer.alloc(32, 9).toString('base64') }];
/** The same keys as a spawned service process reads them from its environment. */
export const TEST_PAYLOAD_KEY_ENV = {
  Temporal__PayloadKeys__0__Id: TEST_PAYLOAD_KEYS[0].Id,
  Temporal__PayloadKeys__0__Key: TEST_PAYLOAD_KEYS[0].Key,
};

/**
 * What an API or worker process of its own (spawnService) needs whatever it tests: the run's PostgreSQL and Temporal,
 * the test keys, and the task queue it works on.
 */
export function serviceProcessEnv(taskQueue: string): Record<string, string> {
  return {
    DATABASE_URL: process.env.TEST_DATABASE_URL!,
    TEMPORAL_ADDRESS: process.env.TEST_TEMPORAL_ADDRESS!,
    Auth__AdminApiKeys: ADMIN_KEY,
    DataProtection__Keys__0__Id: 'test',
    DataProtection__Keys__0__Key: TEST_DATA_PROTECTION_KEY,
    ...TEST_PAYLOAD_KEY_ENV,
    Temporal__TaskQueue: taskQueue,
    Auth__RegistrationRateLimit__PermitLimit: String(UNLIMITED_REGISTRATION.RegistrationRateLimit.PermitLimit),
  };
}

export interface StandaloneService {
  /** The one app, `crm`, it provisions into. */
  app: RunningDownstreamApp;
  appKey: string;
  api: ServiceProcess;
  worker: ServiceProcess;
}

/**
 * An API and a worker in processes of their own (spawnService) against the run's PostgreSQL and Temporal, on a task
 * queue of their own, provisioning into one app `crm` on loopback; `spawn` starts the two with this environment. They
 * are stopped after the file's tests.
 */
export function useStandaloneService(
  spawn: (env: Record<string, string>) => Promise<Pick<StandaloneService, 'api' | 'worker'>>,
  timeoutMs = 90_000,
): StandaloneService {
  const service = { appKey: `app-key-${randomUUID()}` } as StandaloneService;
  beforeAll(async () => {
    service.app = await startDownstreamApp({ apiKey: service.appKey });
    const taskQueue = `test-process-${randomUUID()}`;
    const env = {
      ...serviceProcessEnv(taskQueue),
      Auth__AllowedInternalTargets: '127.0.0.1',
      Temporal__MigrationTaskQueue: `${taskQueue}-migration`,
      ProvisioningApps__crm__CallbackUrl: service.app.url,
      ProvisioningApps__crm__ApiKey: service.appKey,
    };
    Object.assign(service, await spawn(env));
  }, timeoutMs);
  stopAfterAll(() => [service.api, service.worker, service.app]);
  return service;
}

/** What a test file starts and must stop again: a process, a server, a browser, a database pool. */
type Stoppable = { stop(): Promise<unknown> } | { close(): Promise<unknown> } | { destroy(): Promise<unknown> };

/** After the file's tests, stops the parts one after another in the order given, passing over any never started. */
export function stopAfterAll(parts: () => (Stoppable | undefined | false)[]): void {
  afterAll(async () => {
    for (const part of parts()) {
      if (!part) continue;
      if ('stop' in part) await part.stop();
      else if ('close' in part) await part.close();
      else await part.destroy();
    }
  });
}

export interface HttpResult {
  status: number;
  headers: Headers;
  body: any;
}

export interface Harness {
  config: AppConfig;
  apps: Record<string, RunningDownstreamApp>;
  context: ServiceContext;
  env: TestWorkflowEnvironment;
  /** A client with the service's data converter (the environment's own reads sealed payloads as they are). */
  client: Client;
  api: RunningApi;
  request: (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<HttpResult>;
  admin: (method: string, path: string, body?: unknown) => Promise<HttpResult>;
  stop: () => Promise<void>;
}

/** Every test talks only to loopback; a harness is one API, one worker (own task queue) and real downstream apps. */
export async function startHarness(options: HarnessOptions): Promise<Harness> {
  // Migration tests count rows, so each gets a target database of its own; the rest share the run's database.
  const scratch =
    options.migrationSource || options.ownDatabase
      ? await createScratchDatabase(TEST_ADMIN_URL, 'ips_target')
      : undefined;
  const databaseUrl = scratch?.url ?? process.env.TEST_DATABASE_URL!;
  const apps: Record<string, RunningDownstreamApp> = {};
  const appConfig: Record<string, unknown> = {};
  for (const [appId, spec] of Object.entries(options.apps)) {
    const apiKey = `app-key-${appId}-${randomUUID()}`;
    const app = await startDownstreamApp({ apiKey, behaviour: spec.behaviour, host: spec.listenHost });
    apps[appId] = app;
    const url = new URL(app.url);
    if (spec.callbackHost) url.hostname = spec.callbackHost;
    appConfig[appId] = { CallbackUrl: url.toString(), ApiKey: apiKey, TryTimeoutSeconds: spec.tryTimeoutSeconds ?? 60 };
  }
  const sections: Record<string, Record<string, unknown>> = {
    ProvisioningApps: appConfig,
    Auth: {
      AllowedInternalTargets: options.allowedInternalTargets ?? ['127.0.0.1'],
      AdminApiKeys: [ADMIN_KEY],
      // The budget is counted in the store, and every test file registers from 127.0.0.1 into the run's database; a
      // test of the budget sets its own (in a database of its own).
      ...UNLIMITED_REGISTRATION,
    },
    Api: { Port: 0, ResultTimeoutSeconds: 60 },
    Temporal: {
      Address: process.env.TEST_TEMPORAL_ADDRESS,
      TaskQueue: `test-${randomUUID()}`,
      MigrationTaskQueue: `test-migration-${randomUUID()}`,
      PayloadKeys: TEST_PAYLOAD_KEYS,
    },
    Database: { Url: databaseUrl },
    Migration: { Source: { ConnectionString: options.migrationSource } },
    DataProtection: { Keys: [{ Id: 'test', Key: TEST_DATA_PROTECTION_KEY }] },
  };
  for (const [section, values] of Object.entries(options.config ?? {}))
    sections[section] = { ...sections[section], ...values };
  const config = parseConfig(sections);

  const context = await createServiceContext(config, databaseUrl, {
    http: { dnsLookup: options.dnsLookup },
    appProvider: options.appProvider,
  });
  const env = await TestWorkflowEnvironment.createFromExistingServer({ address: process.env.TEST_TEMPORAL_ADDRESS! });
  const home = workerHome(env.nativeConnection, config, { codePath: process.env.TEST_WORKFLOW_BUNDLE! });
  const workers = [await createProvisioningWorker(home, context)];
  if (options.migrationSource) workers.push(await createMigrationWorker(home, migrationDependencies(context)));
  const running = Promise.all(workers.map((w) => w.run()));
  const client = temporalClient(env.connection, config);
  const api = await startApi(config, context, client);

  const request: Harness['request'] = async (method, path, body, headers = {}) => {
    const response = await fetch(`${api.url}${path}`, {
      method,
      headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = text;
    }
    // Every answer a test sees is also checked against the OpenAPI document: a status or body it does not describe fails.
    const mismatch = answerProblem(method, path, response.status, response.headers.get('content-type'), parsed);
    if (mismatch) throw new Error(mismatch);
    return { status: response.status, headers: response.headers, body: parsed };
  };

  return {
    config,
    apps,
    context,
    env,
    client,
    api,
    request,
    admin: (method, path, body) => request(method, path, body, { authorization: `Bearer ${ADMIN_KEY}` }),
    async stop() {
      await api.close();
      for (const w of workers) w.shutdown();
      await running;
      await env.teardown();
      await context.close();
      await scratch?.drop();
      await Promise.all(Object.values(apps).map((a) => a.close()));
    },
  };
}

/** Polls until the check passes; for effects that happen after the API has answered (background deprovisioning). */
export async function eventually<T>(check: () => Promise<T> | T, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export const uniqueEmail = (label: string) => `${label}-${randomUUID().slice(0, 8)}@example.test`;

/**
 * The harness of a test file (or describe block): started before its tests, stopped after them, every app's
 * behaviour reset before each test. The returned object stands for the started harness.
 */
export function useHarness(
  options: HarnessOptions | (() => HarnessOptions),
  afterStart?: (h: Harness) => Promise<void>,
): Harness {
  let started: Harness | undefined;
  beforeAll(async () => {
    started = await startHarness(typeof options === 'function' ? options() : options);
    await afterStart?.(started);
  }, 120_000);
  stopAfterAll(() => [started]);
  beforeEach(() => {
    for (const app of Object.values(started!.apps)) app.state.behaviour = {};
  });
  return new Proxy({} as Harness, {
    get: (_target, key: keyof Harness) => {
      if (!started) throw new Error('the harness is used before it started (outside a test)');
      return started[key];
    },
  });
}

/** The password hash the store holds for a user (null for a user without a password). */
export async function storedPasswordHash(h: Harness, userId: string): Promise<string | null> {
  const row = await h.context.db
    .selectFrom('users')
    .select('password_hash')
    .where('id', '=', userId)
    .executeTakeFirstOrThrow();
  return row.password_hash;
}

/** Sign-in submissions without the per-address budget, for files that sign in many times from loopback. */
/** A registration budget no test file reaches by itself (see startHarness). */
export const UNLIMITED_REGISTRATION = { RegistrationRateLimit: { PermitLimit: 100_000, WindowSeconds: 60 } } as const;

export const UNLIMITED_SIGN_IN = { SignInRateLimit: { PermitLimit: 100_000, WindowSeconds: 60 } } as const;

/**
 * A service of the file's own (a store of its own, the downstream app `crm`) with this configuration, and no
 * per-address sign-in budget unless the configuration sets one: for files that count rows and sign in often.
 */
export const ownService = (config: { Auth?: Record<string, unknown> } & Record<string, unknown>): HarnessOptions => ({
  apps: { crm: {} },
  ownDatabase: true,
  config: { ...config, Auth: { ...UNLIMITED_SIGN_IN, ...config.Auth } },
});

/** A store of its own, no apps, the provider reloading at every request, and no sign-in budget: for sign-in files. */
export const SIGN_IN_HARNESS: HarnessOptions = {
  apps: {},
  ownDatabase: true,
  config: { Oidc: { ReloadSeconds: 0 }, Auth: { ...UNLIMITED_SIGN_IN } },
};

/** A user created through the admin API with this password (a unique e-mail from `label`): its id and e-mail. */
export async function createUserWith(
  h: Pick<Harness, 'admin'>,
  label: string,
  password: string,
  extra: Record<string, unknown> = {},
): Promise<{ id: string; email: string }> {
  const email = uniqueEmail(label);
  const answer = await h.admin('POST', '/api/v1/profile/', { email, password, ...extra });
  if (answer.status !== 201) throw new Error(`creating ${email}: ${answer.status} ${JSON.stringify(answer.body)}`);
  return { id: answer.body.userId as string, email };
}
