import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Client } from 'pg';
import { closedAncestor } from '../../dev/postgres-data-dir';
import { freePort } from '../../dev/ports';
import { spawnService, waitForOutput } from '../support/service-process';

const scratch = mkdtempSync(join(tmpdir(), 'ips-embedded-pg-'));
chmodSync(scratch, 0o755);
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

test('a folder closed to other users is found on the way to a path', () => {
  const closed = join(scratch, 'closed');
  mkdirSync(join(closed, 'project'), { recursive: true });
  chmodSync(closed, 0o700);
  expect(closedAncestor(join(closed, 'project', '.data', 'postgres'), 99_999)).toBe(closed);
  expect(closedAncestor(join(scratch, 'open', '.data'), 99_999)).toBeUndefined();
});

// PostgreSQL runs as the postgres user only when the service is started as root, as it is on CI and this machine.
const asRoot = process.getuid?.() === 0 ? test : test.skip;

async function startInProcess(
  dataDir: string,
  port: number,
  fallbackRoot: string,
): Promise<{ info: { url: string; dataDir: string; lines: string[] }; stop(): Promise<void> }> {
  const service = spawnService(
    'test/support/embedded-postgres-process.ts',
    {},
    [],
    [dataDir, String(port), fallbackRoot],
  );
  const info = JSON.parse((await waitForOutput(service, /^\{.*\}$/m, 90_000))[0]);
  return { info, stop: service.stop };
}

asRoot(
  'as root, a data folder under a folder closed to the postgres user moves to one it can reach, the same at every start',
  async () => {
    const project = join(scratch, 'root-home', 'clone');
    mkdirSync(project, { recursive: true });
    chmodSync(join(scratch, 'root-home'), 0o700);
    const fallbackRoot = join(scratch, 'var-lib');
    const port = await freePort();
    const first = await startInProcess(join(project, '.data', 'postgres'), port, fallbackRoot);
    try {
      expect(first.info.dataDir.startsWith(fallbackRoot)).toBe(true);
      expect(first.info.lines.join('\n')).toContain(
        `the postgres user cannot enter ${join(scratch, 'root-home')} (mode 0700), so the database lives in ${first.info.dataDir}`,
      );
      const client = new Client({ connectionString: first.info.url });
      await client.connect();
      await client.query('create table kept (id int)');
      await client.end();
    } finally {
      await first.stop();
    }
    const second = await startInProcess(join(project, '.data', 'postgres'), port, fallbackRoot);
    try {
      expect(second.info.dataDir).toBe(first.info.dataDir);
      const client = new Client({ connectionString: second.info.url });
      await client.connect();
      expect((await client.query("select to_regclass('kept') as t")).rows[0].t).toBe('kept');
      await client.end();
    } finally {
      await second.stop();
    }
  },
  180_000,
);

// Robustness issue, item 11: a failed start said only "start: undefined".
describe('when the embedded PostgreSQL cannot start, start-up says why and what to do', () => {
  test('its port taken by another process: stops naming the port and the setting, before initialising anything', async () => {
    const holder = createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve));
    try {
      const dataDir = join(scratch, 'port-taken');
      const service = spawnService(
        'test/support/embedded-postgres-process.ts',
        {},
        [],
        [dataDir, String(port), scratch],
      );
      expect(await service.exited).toBe(1);
      expect(service.output()).toContain(
        `postgres: port ${port} on 127.0.0.1 is already in use by another process; stop that process or set Embedded:PostgresPort to a free port`,
      );
      expect(existsSync(join(dataDir, 'PG_VERSION'))).toBe(false);
    } finally {
      holder.close();
    }
  });

  asRoot(
    'its data folder held by a running server (a second npm start of the checkout): stops naming the process',
    async () => {
      const dataDir = join(scratch, 'held', 'postgres');
      mkdirSync(dirname(dataDir), { recursive: true });
      const first = await startInProcess(dataDir, await freePort(), join(scratch, 'held-fallback'));
      try {
        const second = spawnService(
          'test/support/embedded-postgres-process.ts',
          {},
          [],
          [dataDir, String(await freePort()), join(scratch, 'held-fallback')],
        );
        expect(await second.exited).toBe(1);
        expect(second.output()).toMatch(
          /postgres: another process \(pid \d+\) already runs the database in .*, perhaps another `npm start` of this checkout/,
        );
      } finally {
        await first.stop();
      }
    },
    120_000,
  );
});
