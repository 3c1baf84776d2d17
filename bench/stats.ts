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
}

/** Runs `task` `count` times with at most `concurrency` in flight; latencies in milliseconds. */
export async function runLoad(
  count: number,
  concurrency: number,
  task: (i: number) => Promise<boolean>,
): Promise<LoadResult> {
  const latencies: number[] = [];
  let next = 0;
  let failures = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        const t0 = performance.now();
        if (!(await task(i))) failures++;
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 10) / 10;
  return {
    count,
    seconds: round(seconds),
    perSecond: round(count / seconds),
    p50: round(percentile(latencies, 50)),
    p95: round(percentile(latencies, 95)),
    p99: round(percentile(latencies, 99)),
    failures,
  };
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
