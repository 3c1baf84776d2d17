import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Connection } from '@temporalio/client';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { findTemporalCli } from './temporal-cli';
import { SEARCH_ATTRIBUTES } from '../platform/temporal/search-attributes';
import { logger } from '../platform/observability/logger';
import { shuttingDown } from '../platform/observability/shutdown';

export interface DevServer {
  address: string;
  uiUrl?: string;
  /** `abruptly`: SIGKILL at once, as a crash would (fault-injection tests restart it on the same database file). */
  stop: (options?: { abruptly?: boolean }) => Promise<void>;
}

export interface DevServerOptions {
  port: number;
  uiPort?: number;
  /** SQLite file that keeps workflow history across restarts; in memory when absent. */
  dbFile?: string;
  namespace?: string;
  /** How long to wait for the frontend to answer; a loaded 2-core machine can need far more than the SDK's 5 s. */
  readyTimeoutMs?: number;
  /** The service's codec endpoint, so the UI shows histories opened (`…/codec`). */
  uiCodecEndpoint?: string;
}

/**
 * The server's history service hands a new workflow task to matching only when its transfer-queue reader next polls
 * for tasks, and by default that reader polls at most 20 times a second: every workflow task (the step after an
 * activity, a child's start or its end) waits up to 50 ms for it. Polling more often takes that wait away (the
 * docs/benchmarks.md has the figures); the dev server's store is its own, so the extra polls cost next to
 * nothing.
 */
const DEV_SERVER_DYNAMIC_CONFIG = ['history.transferProcessorMaxPollRPS=1000'];
const dynamicConfigArgs = DEV_SERVER_DYNAMIC_CONFIG.flatMap((value) => ['--dynamic-config-value', value]);

class DevServerExited extends Error {}

/**
 * The CLI picks free ports for the services inside the dev server (HTTP API, history, matching, …) and binds them a
 * moment later; another process can take one in between ("bind: address already in use"), and the server exits.
 * Starting it again picks other ports.
 */
const START_ATTEMPTS = 3;

async function waitUntilReady(address: string, child: ChildProcess, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new DevServerExited(`temporal server start-dev exited with code ${child.exitCode}`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      await connection.workflowService.getSystemInfo({});
      await connection.close();
      return;
    } catch (error) {
      lastError = error;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  throw new Error(
    `Temporal dev server at ${address} did not answer within ${timeoutMs} ms: ${(lastError as Error)?.message}`,
  );
}

/** Starts `temporal server start-dev` (with its UI) and waits until it answers. */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const cli = findTemporalCli();
  if (!cli) return startWithSdkDownload(options);
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(options.port),
    '--log-level',
    'error',
    '--namespace',
    options.namespace ?? 'default',
    ...dynamicConfigArgs,
    // Every workflow the service starts sets them; registered at start, they are there before the first one.
    ...SEARCH_ATTRIBUTES.flatMap((key) => ['--search-attribute', `${key.name}=Keyword`]),
  ];
  if (options.uiCodecEndpoint) args.push('--ui-codec-endpoint', options.uiCodecEndpoint);
  if (options.uiPort) args.push('--ui-port', String(options.uiPort));
  else args.push('--headless');
  if (options.dbFile) {
    mkdirSync(dirname(options.dbFile), { recursive: true });
    args.push('--db-filename', options.dbFile);
  }
  for (let attempt = 1; ; attempt++) {
    try {
      return await launch(cli, args, options);
    } catch (error) {
      if (!(error instanceof DevServerExited) || attempt === START_ATTEMPTS) throw error;
      logger.warn(
        `temporal: ${error.message} while starting; starting it again (attempt ${attempt + 1} of ${START_ATTEMPTS})`,
      );
    }
  }
}

async function launch(cli: string, args: string[], options: DevServerOptions): Promise<DevServer> {
  const address = `127.0.0.1:${options.port}`;
  // A process group of its own: Ctrl-C in the terminal reaches this process, which stops the workers first and then
  // this server (a server gone first would leave the draining workers logging lost connections).
  const child = spawn(cli, args, { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  // Its errors pass through while it runs; once the process is stopping (the workers' polls cut short first, then
  // the server itself), its complaints about calls cancelled are no news.
  let stopping = false;
  child.stderr.on('data', (chunk: Buffer) => {
    if (!stopping && !shuttingDown()) process.stderr.write(chunk);
  });
  // Never leave an orphaned server holding the port when this process dies without a clean shutdown.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  try {
    await waitUntilReady(address, child, options.readyTimeoutMs ?? 60_000);
  } catch (error) {
    child.kill('SIGKILL');
    process.removeListener('exit', killOnExit);
    throw error;
  }
  return {
    address,
    uiUrl: options.uiPort ? `http://127.0.0.1:${options.uiPort}` : undefined,
    stop: ({ abruptly = false } = {}) =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        stopping = true;
        const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        child.once('exit', () => {
          clearTimeout(killer);
          process.removeListener('exit', killOnExit);
          resolve();
        });
        child.kill(abruptly ? 'SIGKILL' : 'SIGTERM');
      }),
  };
}

/** Last resort on a machine with internet access: the SDK downloads the CLI itself. */
async function startWithSdkDownload(options: DevServerOptions): Promise<DevServer> {
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      ip: '127.0.0.1',
      port: options.port,
      ui: options.uiPort !== undefined,
      uiPort: options.uiPort,
      dbFilename: options.dbFile,
      namespace: options.namespace,
      executable: { type: 'cached-download' },
      searchAttributes: SEARCH_ATTRIBUTES,
      extraArgs: [
        ...dynamicConfigArgs,
        ...(options.uiCodecEndpoint ? ['--ui-codec-endpoint', options.uiCodecEndpoint] : []),
      ],
    },
  });
  return {
    address: `127.0.0.1:${options.port}`,
    uiUrl: options.uiPort ? `http://127.0.0.1:${options.uiPort}` : undefined,
    stop: () => env.teardown(),
  };
}
