import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { parseConfig } from '../../platform/config/load';
import { migrationOptions, startOrAttachMigration } from '../../migration/runner/control';
import { startHostedMigrationRunner } from '../../migration/runner/runner';
import { createServiceContext, type ServiceContext, migrationDependencies } from '../../composition/service-context';
import { createScratchDatabase } from '../fixtures/source/generate';
import { findMarker, passProgress } from '../../migration/store/migration-markers';
import { createMigrationWorker, workerHome } from '../../workers/create-worker';
import { temporalClient } from '../../platform/temporal/data-converter';
import { eventually, TEST_DATA_PROTECTION_KEY, TEST_PAYLOAD_KEYS, useHarness } from '../support/harness';
import { TEST_ADMIN_URL, useGeneratedSource } from '../support/scratch-store';
import { countRows } from '../support/rows';

const USERS = 3000;
/** Every source user but the six duplicate e-mails and two unusable ids. */
const MIGRATED_USERS = USERS - 6 + 2;
const source = useGeneratedSource(USERS);

describe('a worker killed mid-run', () => {
  let target: Awaited<ReturnType<typeof createScratchDatabase>>;
  let child: ChildProcess | undefined;
  let context: ServiceContext;
  let connection: NativeConnection;
  let worker: Worker | undefined;

  afterAll(async () => {
    child?.kill('SIGKILL');
    worker?.shutdown();
    await connection?.close();
    await context?.close();
    await target?.drop();
  });

  test('the run continues on a restarted worker and ends with counts equal to the source and no duplicates', async () => {
    target = await createScratchDatabase(TEST_ADMIN_URL, 'ips_target');
    const taskQueue = `test-migration-kill-${randomUUID()}`;
    // Small pages (30 per partition) keep the users pass running well past the check below, so the kill lands in it.
    const config = parseConfig({
      Temporal: {
        Address: process.env.TEST_TEMPORAL_ADDRESS,
        MigrationTaskQueue: taskQueue,
        PayloadKeys: TEST_PAYLOAD_KEYS,
      },
      Migration: { Source: { ConnectionString: source().url }, PageSize: 50, Version: 'kill-1' },
      DataProtection: { Key: TEST_DATA_PROTECTION_KEY },
    });
    context = await createServiceContext(config, target.url);

    child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join(__dirname, '..', 'support', 'migration-worker-process.ts'),
        process.env.TEST_TEMPORAL_ADDRESS!,
        target.url,
        source().url,
        taskQueue,
        TEST_DATA_PROTECTION_KEY,
        process.env.TEST_WORKFLOW_BUNDLE!,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve, reject) => {
      child!.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve());
      child!.once('exit', (code) => reject(new Error(`worker process exited with ${code}`)));
    });

    connection = await NativeConnection.connect({ address: process.env.TEST_TEMPORAL_ADDRESS! });
    const client = temporalClient(connection, config);
    const handle = await startOrAttachMigration(client, config, migrationOptions(config));

    // Kill the only worker while the users pass (two partitions) is part-way through.
    await eventually(async () => {
      const marker = await findMarker(context.db, 'kill-1');
      expect(passProgress(marker?.progress).users?.read ?? 0).toBeGreaterThanOrEqual(300);
    }, 60_000);
    child.kill('SIGKILL');
    const usersAtKill = await countRows(context.db, 'users');
    expect(usersAtKill).toBeLessThan(MIGRATED_USERS);

    worker = await createMigrationWorker(
      workerHome(connection, config, { codePath: process.env.TEST_WORKFLOW_BUNDLE! }),
      migrationDependencies(context),
    );
    const running = worker.run();
    const report = await handle.result();
    worker.shutdown();
    await running;
    worker = undefined;

    expect(report.state).toBe('Completed');
    const count = async (table: 'users' | 'user_logins' | 'user_roles' | 'mfa_credentials') =>
      countRows(context.db, table);
    expect(await count('users')).toBe(MIGRATED_USERS);
    expect(await count('user_logins')).toBe(USERS / 4 - 6);
    expect(await count('user_roles')).toBe(USERS - 6);
    expect(await count('mfa_credentials')).toBe((USERS / 5 - 6) * 4);
  }, 180_000);
});

describe('the hosted runner', () => {
  const h = useHarness(() => ({ apps: {}, migrationSource: source().url, config: { Migration: { PageSize: 1000 } } }));

  test('two instances at once run the version once; a later start skips the completed version; unmapped status is warned about', async () => {
    const config = {
      ...h.config,
      Migration: {
        ...h.config.Migration,
        Enabled: true,
        StartupDelaySeconds: 0,
        Version: 'hosted-1',
        MapStatusEndpoint: false,
      },
    };
    const logs: string[][] = [[], [], []];
    const a = startHostedMigrationRunner(config, h.client, h.context.db, (l) => logs[0].push(l));
    const b = startHostedMigrationRunner(config, h.client, h.context.db, (l) => logs[1].push(l));
    await Promise.all([a.done, b.done]);
    for (const log of logs.slice(0, 2)) {
      expect(log[0]).toMatch(/MapStatusEndpoint is false/);
      expect(log.join('\n')).toMatch(/migration-hosted-1 Completed/);
    }
    const description = await h.client.workflow.getHandle('migration-hosted-1').describe();
    const runs = [];
    for await (const run of h.client.workflow.list({ query: `WorkflowId = 'migration-hosted-1'` })) runs.push(run);
    expect(runs.length).toBeLessThanOrEqual(1);
    expect(description.status.name).toBe('COMPLETED');

    const c = startHostedMigrationRunner(config, h.client, h.context.db, (l) => logs[2].push(l));
    await c.done;
    expect(logs[2].join('\n')).toMatch(/version hosted-1 already completed/);
  }, 120_000);

  test('a disabled runner does nothing', async () => {
    const log: string[] = [];
    const runner = startHostedMigrationRunner(
      { ...h.config, Migration: { ...h.config.Migration, Enabled: false } },
      h.client,
      h.context.db,
      (l) => log.push(l),
    );
    await runner.done;
    expect(log).toEqual([]);
  });
});
