import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../dev/ports';
import { stopAfterAll } from '../support/harness';
import { spawnService, waitForOutput, type ServiceProcess } from '../support/service-process';

// Operators issue, item 8: `npm start` as a newcomer meets it, everything embedded (PostgreSQL and Temporal), stopped
// with Ctrl-C. A terminal's Ctrl-C reaches the whole process group, the embedded PostgreSQL included: the test sends
// SIGINT to the group, not to the one process.

const scratch = mkdtempSync(join(tmpdir(), 'ips-start-stop-'));
// As root the embedded PostgreSQL runs as the postgres user, which must reach the data folder.
chmodSync(scratch, 0o755);
const running: ServiceProcess[] = [];
stopAfterAll(() => running);
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function npmStart(env: Record<string, string>): Promise<ServiceProcess> {
  const service = spawnService(
    'cli/start.ts',
    {
      Api__Port: String(await freePort()),
      Temporal__UiPort: String(await freePort()),
      Metrics__Port: String(await freePort()),
      Embedded__PostgresPort: String(await freePort()),
      Embedded__TemporalPort: String(await freePort()),
      Embedded__DataDir: join(scratch, 'data'),
      ...env,
    },
    // As package.json's start script runs it.
    ['--disable-proto=throw', '--max-old-space-size=448'],
    [],
    { ownGroup: true },
  );
  running.push(service);
  await waitForOutput(service, /start: next: no OpenID Connect clients yet.*\n/, 180_000);
  return service;
}

/** The message of every line, JSON lines as the service writes them when its output is not a terminal. */
const messages = (output: string) =>
  output
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      try {
        return (JSON.parse(line) as { msg: string }).msg;
      } catch {
        return line;
      }
    });

/** Ctrl-C: SIGINT to the process group. Resolves with the exit status, how long it took and the lines after it. */
async function controlC(service: ServiceProcess): Promise<{ status: number | null; ms: number; after: string[] }> {
  const before = service.output().length;
  const sent = Date.now();
  process.kill(-service.child.pid!, 'SIGINT');
  const status = await service.exited;
  return { status, ms: Date.now() - sent, after: messages(service.output().slice(before)) };
}

test('start-up is quiet and ends with the next steps; Ctrl-C stops everything in seconds with status 0 and one line', async () => {
  const service = await npmStart({});
  const startUp = messages(service.output());
  // No bundler report, no SDK worker states, no multi-line entries: one line per thing started, then what to do.
  expect(service.output()).not.toMatch(/webpack|Workflow bundle|Worker state changed|Nexus/);
  expect(startUp.length).toBeLessThanOrEqual(20);
  expect(startUp.at(-1)).toMatch(/^start: next: /);
  expect(startUp.filter((line) => !line.startsWith('start: next: ')).at(-1)).toBe(
    'start: ready; Ctrl-C stops everything',
  );

  const postmasterPid = join(scratch, 'data', 'postgres', 'postmaster.pid');
  expect(existsSync(postmasterPid)).toBe(true);
  const stop = await controlC(service);
  expect(stop.status).toBe(0);
  // Under 3 s on a quiet machine (the Temporal dev server's own stop is most of it); the bound leaves room for load.
  expect(stop.ms).toBeLessThan(5_000);
  expect(stop.after).toEqual([
    'start: stopped the API, the worker, the Temporal dev server and the embedded PostgreSQL (SIGINT)',
  ]);
  expect(existsSync(postmasterPid)).toBe(false);
}, 240_000);

test('with LOG_LEVEL=debug the details are there: the SDK worker states and each step of the stop', async () => {
  const service = await npmStart({ LOG_LEVEL: 'debug' });
  // The SDK's core hands its log lines over in batches: they may come a moment after the next steps.
  await waitForOutput(service, /Worker state changed/, 15_000);
  const stop = await controlC(service);
  expect(stop.status).toBe(0);
  expect(stop.after).toContain('start: SIGINT received, shutting down');
  expect(stop.after).toEqual(expect.arrayContaining([expect.stringMatching(/^start: the worker stopped in \d+ ms$/)]));
  expect(stop.after.at(-1)).toBe(
    'start: stopped the API, the worker, the Temporal dev server and the embedded PostgreSQL (SIGINT)',
  );
  // The second start found the first one's cluster, and generated no new key.
  expect(readFileSync(join(scratch, 'data', 'data-protection-keys.json'), 'utf8')).toBeTruthy();
  expect(service.output()).not.toContain('initialising a new cluster');
}, 240_000);
