import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { freePort } from '../../dev/ports';
import { ADMIN_KEY, stopAfterAll } from '../support/harness';
import { spawnService, waitForOutput, type ServiceProcess } from '../support/service-process';

// Operators issue, item 7: a newcomer runs `npm start`, makes the sample source with `npm run sample-source`, and
// rehearses the migration with `npm run migrate` in the same checkout, configuring nothing: the CLI writes into
// start's embedded database with start's key ring, says so, and its workflows show on start's Temporal server.

const ROOT = join(__dirname, '..', '..');
const scratch = mkdtempSync(join(tmpdir(), 'ips-rehearsal-'));
// As root the embedded PostgreSQL runs as the postgres user, which must reach the data folder.
chmodSync(scratch, 0o755);
const exec = promisify(execFile);
let start: ServiceProcess;
let env: Record<string, string>;
let api: string;
stopAfterAll(() => [start]);
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

beforeAll(async () => {
  const apiPort = String(await freePort());
  env = {
    Api__Port: apiPort,
    Auth__AdminApiKeys__0: ADMIN_KEY,
    Temporal__UiPort: String(await freePort()),
    Metrics__Port: String(await freePort()),
    Embedded__PostgresPort: String(await freePort()),
    Embedded__TemporalPort: String(await freePort()),
    Embedded__DataDir: join(scratch, 'data'),
  };
  api = `http://127.0.0.1:${apiPort}`;
  start = spawnService('cli/start.ts', env, ['--disable-proto=throw'], [], { ownGroup: true });
  await waitForOutput(start, /start: ready/, 180_000);
}, 240_000);

/** A script of the checkout as npm runs it, with start's settings and nothing else: no DATABASE_URL, no Temporal. */
async function npmRun(script: string, ...args: string[]): Promise<{ code: number; out: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, ['--import', 'tsx', join(ROOT, script), ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH!, HOME: process.env.HOME ?? '/tmp', ...env },
      timeout: 180_000,
    });
    return { code: 0, out: stdout + stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}

const usersLine = (out: string) => out.match(/^users +read.*$/m)?.[0] ?? '';
const skipped = (out: string) => Number(usersLine(out).match(/(?:skipped|would skip) (\d+)/)?.[1]);
/** The users pass's counts, a dry run's "would create" read as the real run's "created". */
const userCounts = (out: string) =>
  usersLine(out)
    .replace(/^.*?read/, 'read')
    .replace(/would (create|update|skip)/g, (_, verb: string) => `${verb}d`.replace('skipd', 'skipped'));

test('sample source, dry run and real run in the checkout of a running npm start: same counts, start is the target', async () => {
  const sample = await npmRun('scripts/sample-source.ts', '--users', '600');
  expect(sample.code).toBe(0);
  const source = sample.out.match(/--Source:ConnectionString (\S+)/)![1];
  expect(sample.out).toContain(`next: npm run migrate -- --Source:ConnectionString ${source} --DryRun true`);

  const dry = await npmRun('cli/migrate.ts', '--Source:ConnectionString', source, '--DryRun', 'true');
  expect(dry.code).toBe(0);
  expect(dry.out).toContain(`target: 127.0.0.1:${env.Embedded__PostgresPort}/identity`);
  expect(dry.out).toContain(`temporal: the running \`npm start\`'s server at 127.0.0.1:${env.Embedded__TemporalPort}`);
  expect(dry.out).toContain('migration 1 (dry run): Completed');

  // The sample holds MFA secrets: without start's data-protection key the real run would fail at once.
  const real = await npmRun('cli/migrate.ts', '--Source:ConnectionString', source, '--DryRun', 'false');
  expect(real.code).toBe(0);
  expect(real.out).toContain('migration 1: Completed');
  expect(skipped(real.out)).toBeGreaterThan(0);
  expect(skipped(dry.out)).toBe(skipped(real.out));
  expect(userCounts(dry.out)).toMatch(/^read \d+\S* +created [1-9]/);
  expect(userCounts(dry.out)).toBe(userCounts(real.out));

  // Written where start reads: its API finds a migrated user.
  const found = await fetch(`${api}/api/v1/profile?email=user1@example.com`, {
    headers: { authorization: `Bearer ${ADMIN_KEY}` },
  });
  expect(found.status).toBe(200);

  // The runs are on start's Temporal server, where its UI lists them.
  const connection = await Connection.connect({ address: `127.0.0.1:${env.Embedded__TemporalPort}` });
  try {
    const { executions } = await connection.workflowService.listWorkflowExecutions({
      namespace: 'default',
      query: "WorkflowType = 'migrationRun'",
    });
    expect(executions.length).toBeGreaterThanOrEqual(2);
  } finally {
    await connection.close();
  }
}, 400_000);

test('with start stopped, the CLI in its checkout says the target runs only while npm start does', async () => {
  process.kill(-start.child.pid!, 'SIGINT');
  expect(await start.exited).toBe(0);
  const res = await npmRun(
    'cli/migrate.ts',
    '--Source:ConnectionString',
    'postgres://127.0.0.1:1/none',
    '--DryRun',
    'true',
  );
  expect(res.code).toBe(1);
  expect(res.out).toContain(
    `the target is this checkout's embedded PostgreSQL (127.0.0.1:${env.Embedded__PostgresPort}), which runs only while \`npm start\` does`,
  );
}, 60_000);
