import { pipeline } from 'node:stream/promises';
import { getHeapStatistics } from 'node:v8';
import { NativeConnection, DefaultLogger, Runtime } from '@temporalio/worker';
import { Client as PgClient } from 'pg';
import { from as copyFrom, to as copyTo } from 'pg-copy-streams';
import { parseConfig } from '../platform/config/load';
import { migrationOptions, startOrAttachMigration } from '../migration/runner/control';
import { freePort } from '../dev/ports';
import { createServiceContext, migrationDependencies } from '../composition/service-context';
import { startDevServer } from '../dev/temporal-dev-server';
import { createScratchDatabase, generateSource } from '../test/fixtures/source/generate';
import { createMigrationWorker, workerHome } from '../workers/create-worker';
import { temporalClient } from '../platform/temporal/data-converter';
import { BENCH_ADMIN_URL, runBenchmark } from './stats';

/**
 * `npm run bench:migration -- --users 1000000 [--page-size 10000] [--parallelism 2]`: the generator fills a source first (not timed;
 * `--source <postgres url>` uses an existing source instead, which is left as it is);
 * then a full run, an unchanged-source re-run under a new version, and as baselines a raw COPY of the source's user
 * rows into an empty table and a raw COPY of every row the run wrote (see copyWrittenRows). Prints JSON lines. The
 * worker runs in this process, which npm starts with the workers' heap limit (workers/heap-limit.ts) and which bundles
 * the workflow code at start, as `npm run worker` does.
 */
function arg(name: string): number | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : undefined;
}

/** Peaks of the process's memory, in MB: resident, V8's heap, and memory outside it (Buffers, native parts). */
let peak = { rss: 0, heapTotal: 0, external: 0 };
const sampler = setInterval(() => {
  const now = process.memoryUsage();
  peak = {
    rss: Math.max(peak.rss, now.rss / 2 ** 20),
    heapTotal: Math.max(peak.heapTotal, now.heapTotal / 2 ** 20),
    external: Math.max(peak.external, now.external / 2 ** 20),
  };
}, 100);

async function copyBaseline(sourceUrl: string, targetUrl: string): Promise<number> {
  const source = new PgClient({ connectionString: sourceUrl });
  const target = new PgClient({ connectionString: targetUrl });
  await Promise.all([source.connect(), target.connect()]);
  try {
    const columns =
      '"Id","UserName","NormalizedUserName","Email","NormalizedEmail","EmailConfirmed","PasswordHash","SecurityStamp","TwoFactorEnabled"';
    await target.query(
      `create table copy_baseline ("Id" text primary key, "UserName" text, "NormalizedUserName" text, "Email" text, "NormalizedEmail" text, "EmailConfirmed" boolean, "PasswordHash" text, "SecurityStamp" text, "TwoFactorEnabled" boolean)`,
    );
    const started = performance.now();
    await pipeline(
      source.query(copyTo(`copy (select ${columns} from "AspNetUsers") to stdout`)),
      target.query(copyFrom(`copy copy_baseline (${columns}) from stdin`)),
    );
    return (performance.now() - started) / 1000;
  } finally {
    await Promise.all([source.end(), target.end()]);
  }
}

/** The tables a run writes per user: users with their folded attributes, role links, external logins, MFA. */
const WRITTEN_TABLES = ['users', 'user_roles', 'user_logins', 'mfa_credentials'];

/**
 * The floor of writing what the run wrote: every row of those tables, copied out of the target after the run and into
 * empty tables of the same shape (keys and indexes included, as the run meets them), in one COPY each.
 */
async function copyWrittenRows(targetUrl: string): Promise<{ seconds: number; rows: number }> {
  const reader = new PgClient({ connectionString: targetUrl });
  const writer = new PgClient({ connectionString: targetUrl });
  await Promise.all([reader.connect(), writer.connect()]);
  try {
    let rows = 0;
    for (const table of WRITTEN_TABLES) {
      await writer.query(`create table copy_${table} (like ${table} including all)`);
      rows += Number((await reader.query<{ n: string }>(`select count(*) as n from ${table}`)).rows[0].n);
    }
    const started = performance.now();
    for (const table of WRITTEN_TABLES) {
      await pipeline(
        reader.query(copyTo(`copy ${table} to stdout`)),
        writer.query(copyFrom(`copy copy_${table} from stdin`)),
      );
    }
    return { seconds: (performance.now() - started) / 1000, rows };
  } finally {
    await Promise.all([reader.end(), writer.end()]);
  }
}

async function countSourceUsers(url: string): Promise<number> {
  const client = new PgClient({ connectionString: url });
  await client.connect();
  try {
    return Number((await client.query<{ n: string }>('select count(*) as n from "AspNetUsers"')).rows[0].n);
  } finally {
    await client.end();
  }
}

async function main(): Promise<void> {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const givenSource = process.argv.includes('--source')
    ? process.argv[process.argv.indexOf('--source') + 1]
    : undefined;
  const source = givenSource
    ? { url: givenSource, drop: async () => {} }
    : await createScratchDatabase(BENCH_ADMIN_URL, 'ips_bench_source');
  const target = await createScratchDatabase(BENCH_ADMIN_URL, 'ips_bench_target');
  const server = await startDevServer({ port: await freePort(), readyTimeoutMs: 120_000 });
  try {
    let users = arg('users') ?? 100_000;
    if (givenSource) users = await countSourceUsers(givenSource);
    else {
      const generateStarted = performance.now();
      await generateSource(source.url, { users });
      console.error(
        `bench: generated ${users} source users in ${((performance.now() - generateStarted) / 1000).toFixed(1)} s`,
      );
    }

    const config = parseConfig({
      // Page size and parallelism are the configuration's defaults unless given.
      Migration: {
        Source: { ConnectionString: source.url },
        PageSize: arg('page-size'),
        Parallelism: arg('parallelism'),
      },
      DataProtection: { Key: Buffer.alloc(32, 1).toString('base64') },
      Temporal: {
        Address: server.address,
        PayloadKeys: [{ Id: 'bench', Key: Buffer.alloc(32, 2).toString('base64') }],
      },
    });
    const context = await createServiceContext(config, target.url);
    const connection = await NativeConnection.connect({ address: server.address });
    const worker = await createMigrationWorker(workerHome(connection, config), migrationDependencies(context));
    const running = worker.run();
    const client = temporalClient(connection, config);
    const timed = async (version: string) => {
      const started = performance.now();
      const cpu = process.cpuUsage();
      const report = await (
        await startOrAttachMigration(client, config, migrationOptions(config, { version }))
      ).result();
      const { user, system } = process.cpuUsage(cpu);
      // The worker's CPU (this process), which the wall time hides on a loaded machine.
      return { report, seconds: (performance.now() - started) / 1000, cpuSeconds: (user + system) / 1e6 };
    };

    peak = { rss: 0, heapTotal: 0, external: 0 };
    const first = await timed('bench-1');
    const firstPeak = peak;
    const rerun = await timed('bench-2');
    worker.shutdown();
    await running;
    await connection.close();
    await context.close();
    const copySeconds = await copyBaseline(source.url, target.url);
    const written = await copyWrittenRows(target.url);

    const round = (n: number) => Math.round(n * 100) / 100;
    console.log(
      JSON.stringify({
        bench: 'migration',
        variant: 'full-run',
        users,
        pageSize: config.Migration.PageSize,
        parallelism: config.Migration.Parallelism,
        state: first.report.state,
        seconds: round(first.seconds),
        usersPerSecond: Math.round(users / first.seconds),
        workerCpuSeconds: round(first.cpuSeconds),
        heapLimitMb: Math.round(getHeapStatistics().heap_size_limit / 2 ** 20),
        peakRssMb: Math.round(firstPeak.rss),
        peakHeapMb: Math.round(firstPeak.heapTotal),
        peakExternalMb: Math.round(firstPeak.external),
        passes: Object.fromEntries(
          first.report.passes.map((p) => [p.pass, { seconds: p.seconds, read: p.read, created: p.created }]),
        ),
      }),
    );
    console.log(
      JSON.stringify({
        bench: 'migration',
        variant: 'unchanged-rerun-new-version',
        users,
        seconds: round(rerun.seconds),
        ratioToFirst: round(rerun.seconds / first.seconds),
        workerCpuSeconds: round(rerun.cpuSeconds),
        passes: Object.fromEntries(
          rerun.report.passes.map((p) => [p.pass, { seconds: p.seconds, created: p.created, skipped: p.skipped }]),
        ),
      }),
    );
    console.log(
      JSON.stringify({
        bench: 'migration',
        variant: 'baseline-raw-copy-users',
        users,
        seconds: round(copySeconds),
        usersPerSecond: Math.round(users / copySeconds),
      }),
    );
    console.log(
      JSON.stringify({
        bench: 'migration',
        variant: 'baseline-raw-copy-written-rows',
        tables: WRITTEN_TABLES,
        rows: written.rows,
        seconds: round(written.seconds),
      }),
    );
    const toWritten = round(first.seconds / written.seconds);
    const rerunRatio = round(rerun.seconds / first.seconds);
    console.log(
      JSON.stringify({
        bench: 'migration',
        ratio: { fullRunToCopyOfWrittenRows: toWritten, fullRunToCopyOfUsers: round(first.seconds / copySeconds) },
        targets: {
          fullRunToCopyOfWrittenRowsMax: 2,
          rerunRatioMax: 0.12,
          peakRssMbMax: 450,
          met: toWritten <= 2 && rerunRatio <= 0.12 && firstPeak.rss < 450,
        },
      }),
    );
  } finally {
    clearInterval(sampler);
    await server.stop();
    await source.drop();
    await target.drop();
  }
}

runBenchmark(main);
