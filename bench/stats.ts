import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { parseConfig } from '../platform/config/load';

export function percentile(sortedMs: number[], p: number): number {
  if (sortedMs.length === 0) return NaN;
  const index = Math.min(sortedMs.length - 1, Math.ceil((p / 100) * sortedMs.length) - 1);
  return sortedMs[Math.max(0, index)];
}

export interface LoadResult {
  count: number;
  seconds: number;
  perSecond: number;
  p50: number;
  p95: number;
  p99: number;
  failures: number;
  /** Why tasks failed, each reason once (the first few), when the tasks said. */
  failureReasons?: string[];
}

/** A task's result: true when it did what it measures; false, or why not, when it failed. */
export type TaskResult = boolean | string;

/** How many different failure reasons a result keeps. */
const REASONS_KEPT = 5;

/** What one load run saw: each task's latency in milliseconds, the wall time, the failures. */
export interface LoadSamples {
  latencies: number[];
  seconds: number;
  failures: number;
  failureReasons: Set<string>;
}

/** Runs `task` `count` times with at most `concurrency` in flight. */
export async function loadSamples(
  count: number,
  concurrency: number,
  task: (i: number) => Promise<TaskResult>,
  first = 0,
): Promise<LoadSamples> {
  const latencies: number[] = [];
  let next = first;
  let failures = 0;
  const failureReasons = new Set<string>();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < first + count) {
        const i = next++;
        const t0 = performance.now();
        const result = await task(i);
        if (result !== true) failures++;
        if (typeof result === 'string' && failureReasons.size < REASONS_KEPT) failureReasons.add(result);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  return { latencies, seconds: (performance.now() - started) / 1000, failures, failureReasons };
}

/** Several runs' samples as one result: throughput over their summed wall time, percentiles over all latencies. */
export function summarize(runs: LoadSamples[]): LoadResult {
  const latencies = runs.flatMap((r) => r.latencies).sort((a, b) => a - b);
  const seconds = runs.reduce((sum, r) => sum + r.seconds, 0);
  const round = (n: number) => Math.round(n * 10) / 10;
  const reasons = [...new Set(runs.flatMap((r) => [...r.failureReasons]))].slice(0, REASONS_KEPT);
  return {
    count: latencies.length,
    seconds: round(seconds),
    perSecond: round(latencies.length / seconds),
    p50: round(percentile(latencies, 50)),
    p95: round(percentile(latencies, 95)),
    p99: round(percentile(latencies, 99)),
    failures: runs.reduce((sum, r) => sum + r.failures, 0),
    ...(reasons.length > 0 ? { failureReasons: reasons } : {}),
  };
}

/** Runs `task` `count` times with at most `concurrency` in flight; latencies in milliseconds. */
export async function runLoad(
  count: number,
  concurrency: number,
  task: (i: number) => Promise<TaskResult>,
): Promise<LoadResult> {
  return summarize([await loadSamples(count, concurrency, task)]);
}

/** The PostgreSQL server the benchmarks make their throw-away databases on. */
export const BENCH_ADMIN_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** A numeric command-line option (`--name 42`), or the fallback. */
export function numberArg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

/** Runs a benchmark's main function; a failure prints and exits 1. */
export function runBenchmark(main: () => Promise<void>): void {
  main().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}

/** One result line, on standard error: standard output carries the service's own log lines, as in `npm start`. */
export function report(result: object): void {
  process.stderr.write(`${JSON.stringify(result)}\n`);
}

/** CPU seconds used so far: this process (all its threads), and every process of this machine by id. */
export interface CpuReading {
  self: number;
  processes: Map<number, { name: string; parent: number; seconds: number }>;
}

export function readCpu(): CpuReading {
  const { user, system } = process.cpuUsage();
  const processes: CpuReading['processes'] = new Map();
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // ended while the list was read
    }
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    // Fields after the name: state is the 3rd field of the line, the parent's id the 4th, utime the 14th and stime
    // the 15th, in clock ticks.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const seconds = (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
    processes.set(Number(pid), { name, parent: Number(fields[1]), seconds });
  }
  return { self: (user + system) / 1e6, processes };
}

/** This process's children with the given name (a server it started), as the reading saw them. */
export function childrenNamed(reading: CpuReading, name: string): number[] {
  return [...reading.processes].filter(([, p]) => p.parent === process.pid && p.name === name).map(([pid]) => pid);
}

/**
 * The CPU seconds spent between two readings by this process and by each named group of processes. Only the given
 * processes count, not every process of a name: on a shared machine other runs' servers would count too. A process
 * started in between counts from zero; one that ended in between is missed.
 */
export function cpuSpent(
  before: CpuReading,
  after: CpuReading,
  groups: Record<string, number[]>,
): Record<string, number> {
  const spent: Record<string, number> = { 'this process': after.self - before.self };
  for (const [group, pids] of Object.entries(groups)) {
    spent[group] = pids.reduce((sum, pid) => {
      const now = after.processes.get(pid)?.seconds ?? 0;
      return sum + Math.max(0, now - (before.processes.get(pid)?.seconds ?? 0));
    }, 0);
  }
  return spent;
}

/** Linux's USER_HZ, 100 on every architecture Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

/**
 * The service's configuration in the sign-in and token benchmarks: these clients, fresh keys, an admin key, and a
 * sign-in budget no benchmark reaches (it measures the flows, not the limiter).
 */
export function benchServiceConfig(clients: Array<Record<string, unknown>>) {
  return parseConfig(benchServiceSettings(clients));
}

/** benchServiceConfig's settings as appsettings.json would hold them, for service processes of their own. */
export function benchServiceSettings(clients: Array<Record<string, unknown>>) {
  return {
    Auth: { AdminApiKeys: ['bench-admin'], SignInRateLimit: { PermitLimit: 1_000_000, WindowSeconds: 60 } },
    Api: { Port: 0 },
    DataProtection: { Keys: [{ Id: 'bench', Key: randomBytes(32).toString('base64') }] },
    Oidc: { CookieKeys: [randomBytes(32).toString('base64url')] },
    Temporal: { PayloadKeys: [{ Id: 'bench', Key: randomBytes(32).toString('base64') }] },
    Clients: clients,
  };
}

/** A client secret as IdentityServer's configuration holds it: `"secret".Sha256()`. */
export const sha256Secret = (secret: string): string => createHash('sha256').update(secret).digest('base64');

/**
 * Counts the statements this process sends to PostgreSQL (the service in process; a bare provider sends none), and of
 * them the transactions begun: per request, the store round trips an endpoint costs. With `withTexts`, also each
 * statement's text (its first 100 characters) and how often it was sent, to print.
 */
export function countStatements(withTexts: boolean): {
  sent: { statements: number; transactions: number };
  texts: Map<string, number> | undefined;
} {
  const sent = { statements: 0, transactions: 0 };
  const texts = withTexts ? new Map<string, number>() : undefined;
  // eslint-disable-next-line @typescript-eslint/unbound-method -- called with the client as `this` below
  const query = pg.Client.prototype.query as (...args: unknown[]) => unknown;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    sent.statements++;
    const text = typeof args[0] === 'string' ? args[0] : (args[0] as { text?: string } | undefined)?.text;
    if (text?.trim().toLowerCase() === 'begin') sent.transactions++;
    if (texts && text) texts.set(text.slice(0, 100), (texts.get(text.slice(0, 100)) ?? 0) + 1);
    return query.apply(this, args);
  } as typeof pg.Client.prototype.query;
  return { sent, texts };
}
