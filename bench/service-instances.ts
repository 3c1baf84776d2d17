import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { freePort } from '../dev/ports';
import { startRoundRobinProxy, type RoundRobinProxy } from './round-robin-proxy';

const ROOT = join(__dirname, '..');

/** How package.json's `start` script runs the service, after its set-up step (which the benchmark has done). */
const START_COMMAND = ['--disable-proto=throw', '--max-old-space-size=448', '--import', 'tsx', 'cli/start.ts'];

/** The line `npm start` prints once the API answers and the worker polls (cli/start.ts). */
const READY_LINE = /start: ready/;

/** A service process: `npm start` over an external store and Temporal, as one instance of a deployment runs. */
interface Instance {
  child: ChildProcess;
  url: string;
  /** Resolves with the exit code (or the signal's name) once the process has ended. */
  exited: Promise<number | string | null>;
}

/** Several instances of the service behind one address, and what they cost. */
export interface ServiceInstances {
  /** The round-robin proxy's base URL: each request goes to the next instance. */
  url: string;
  proxy: RoundRobinProxy;
  pids: number[];
  stop(): Promise<void>;
}

/** How long one instance may take to print its ready line (bundling the workflow code on a loaded 2-core machine). */
const READY_TIMEOUT_MS = 180_000;

/**
 * Starts `count` service processes (API and worker each, as `npm start` runs them) on the given settings, every one
 * over the same database, Temporal server and task queue, and a round-robin proxy in front of them. Their log lines go
 * to this process's standard output, as the in-process service's do.
 */
export async function startServiceInstances(
  count: number,
  settings: Record<string, unknown>,
  shared: { databaseUrl: string; temporalAddress: string },
): Promise<ServiceInstances> {
  const dir = mkdtempSync(join(tmpdir(), 'ips-bench-instances-'));
  const instances: Instance[] = [];
  try {
    for (let i = 0; i < count; i++) instances.push(await startInstance(dir, i, settings, shared));
  } catch (error) {
    await Promise.all(instances.map(stopInstance));
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const proxy = await startRoundRobinProxy(instances.map((instance) => instance.url));
  return {
    url: proxy.url,
    proxy,
    pids: instances.map((instance) => instance.child.pid!),
    async stop() {
      await proxy.close();
      await Promise.all(instances.map(stopInstance));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function startInstance(
  dir: string,
  index: number,
  settings: Record<string, unknown>,
  shared: { databaseUrl: string; temporalAddress: string },
): Promise<Instance> {
  const port = await freePort();
  const file = join(dir, `appsettings-${index}.json`);
  const api = { ...(settings.Api as object | undefined), Host: '127.0.0.1', Port: port };
  writeFileSync(file, JSON.stringify({ ...settings, Api: api }));
  const child = spawn(process.execPath, START_COMMAND, {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH!,
      HOME: process.env.HOME ?? '/tmp',
      APPSETTINGS: resolve(file),
      DATABASE_URL: shared.databaseUrl,
      TEMPORAL_ADDRESS: shared.temporalAddress,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | string | null>((done) =>
    child.once('exit', (code, signal) => done(code ?? signal)),
  );
  await new Promise<void>((ready, failed) => {
    let waiting = true;
    let seen = '';
    const timer = setTimeout(
      () => failed(new Error(`service instance ${index} not ready within ${READY_TIMEOUT_MS} ms`)),
      READY_TIMEOUT_MS,
    );
    child.stdout.on('data', (chunk: Buffer) => {
      process.stdout.write(chunk);
      if (!waiting) return;
      seen = (seen + chunk.toString()).slice(-4096);
      if (!READY_LINE.test(seen)) return;
      waiting = false;
      clearTimeout(timer);
      ready();
    });
    void exited.then((code) => {
      clearTimeout(timer);
      failed(new Error(`service instance ${index} exited (${code}) before it was ready`));
    });
  }).catch(async (error: unknown) => {
    await stopInstance({ child, url: '', exited });
    throw error;
  });
  return { child, url: `http://127.0.0.1:${port}`, exited };
}

async function stopInstance(instance: Instance): Promise<void> {
  const { child } = instance;
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  await instance.exited;
}
