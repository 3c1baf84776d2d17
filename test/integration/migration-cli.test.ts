import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createScratchDatabase, generateSource } from '../../source/fixture/generate';
import { TEST_DATA_PROTECTION_KEY } from '../support/harness';
import { TEST_ADMIN_URL } from '../support/scratch-store';

const run = promisify(execFile);
let source: Awaited<ReturnType<typeof createScratchDatabase>>;
let target: Awaited<ReturnType<typeof createScratchDatabase>>;

beforeAll(async () => {
  [source, target] = await Promise.all([createScratchDatabase(TEST_ADMIN_URL, 'ips_source'), createScratchDatabase(TEST_ADMIN_URL, 'ips_target')]);
  await generateSource(source.url, { users: 300 });
}, 60_000);
afterAll(async () => {
  await source?.drop();
  await target?.drop();
});

/** The command line as an operator runs it: its own Temporal dev server and worker, no TEMPORAL_ADDRESS. */
async function migrate(...args: string[]): Promise<{ code: number; out: string }> {
  const env = { ...process.env, TEMPORAL_ADDRESS: '', DATABASE_URL: '', DataProtection__Key: TEST_DATA_PROTECTION_KEY };
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', join(__dirname, '..', '..', 'cli', 'migrate.ts'), ...args], { env, timeout: 120_000 });
    return { code: 0, out: stdout + stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}

describe('npm run migrate', () => {
  test('a dry run prints the validation report and writes nothing; a real run copies; a re-run of the version is skipped', async () => {
    const base = ['--Source:ConnectionString', source.url, '--Target:ConnectionString', target.url];
    const dry = await migrate(...base, '--DryRun', 'true', '--UsersMode', 'CreateOnly');
    expect(dry.code).toBe(0);
    expect(dry.out).toContain('migration 1 (dry run): Completed');
    expect(dry.out).toMatch(/inventory: 25\/25 tables as expected/);
    expect(dry.out).toMatch(/users +read 304 +created 0/);
    expect(dry.out).not.toContain(source.url);

    const real = await migrate(...base, '--DryRun', 'false');
    expect(real.code).toBe(0);
    expect(real.out).toContain('migration 1: Completed');
    expect(real.out).toMatch(/users +read 304 +created 302 +updated 0 +skipped 2/);

    const again = await migrate(...base);
    expect(again.code).toBe(0);
    expect(again.out).toMatch(/migration 1: Skipped — version 1 completed/);
  }, 300_000);

  test('bad arguments exit non-zero with a message that names what is missing', async () => {
    const noSource = await migrate('--Target:ConnectionString', target.url);
    expect(noSource.code).toBe(1);
    expect(noSource.out).toContain('set --Source:ConnectionString <SOURCE_CONNECTION_STRING>');
    const badMode = await migrate('--Source:ConnectionString', source.url, '--Target:ConnectionString', target.url, '--UsersMode', 'Sometimes');
    expect(badMode.code).toBe(1);
    expect(badMode.out).toMatch(/Migration:UsersMode/);
  }, 60_000);
});
