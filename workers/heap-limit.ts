import { getHeapStatistics } from 'node:v8';

/**
 * The old-generation limit (`--max-old-space-size`, MB) that the start scripts in package.json and the image's
 * NODE_OPTIONS give every process that runs a migration worker. Left to itself V8 sizes the heap from the machine's
 * memory and lets a migration's garbage pile up toward it, far above the live set. Under this limit it collects
 * sooner, for some speed; smaller limits cost more. It leaves room for the largest settings (Parallelism 16 keeps
 * MIGRATION_PAGES_AT_ONCE pages of PageSize 10,000 in flight). The figures are in docs/benchmarks.md.
 */
export const WORKER_HEAP_LIMIT_MB = 448;

/**
 * glibc's malloc arenas (`MALLOC_ARENA_MAX`, an environment variable read when the process starts), set beside the
 * heap limit wherever it is. By default glibc gives threads that allocate at once arenas of their own, up to eight
 * per core, and each keeps its freed memory: the SDK's native threads, libuv's pool and V8's helpers kept 35–40 MB
 * more resident at the peak of a migration (1M users: 461 MB against 424 MB with 2 arenas, the same V8 heap; the
 * CPU did not change beyond run-to-run noise).
 */
export const WORKER_MALLOC_ARENAS = 2;

/** V8 adds the young generation to the old-generation limit; anything beyond twice ours was not set by us. */
const UNSET_ABOVE_MB = 2 * WORKER_HEAP_LIMIT_MB;

/** The --max-old-space-size this process was started with (a flag of node or NODE_OPTIONS), if any. */
export function oldSpaceFlagMb(
  argv = process.execArgv,
  nodeOptions = process.env.NODE_OPTIONS ?? '',
): number | undefined {
  const flags = [...argv, ...nodeOptions.split(/\s+/)];
  const values = flags.map((f) => /^--max[-_]old[-_]space[-_]size=(\d+)$/.exec(f)?.[1]).filter(Boolean);
  return values.length > 0 ? Number(values[values.length - 1]) : undefined;
}

/**
 * The worker's start-up line about its heap limit: a warning, naming the setting, when the limit is V8's own. V8
 * reports the old generation's limit plus its young generation (448 MB under the flag reads as 496), so the line names
 * both, and the figure the docs and the flag use is the one a reader finds first.
 */
export function heapLimitNotice(
  limitMb = getHeapStatistics().heap_size_limit / 2 ** 20,
  flagMb = oldSpaceFlagMb(),
): {
  level: 'info' | 'warn';
  message: string;
} {
  const limit = Math.round(limitMb);
  if (limit <= UNSET_ABOVE_MB)
    return {
      level: 'info',
      message:
        flagMb === undefined
          ? `worker: V8 heap limit ${limit} MB`
          : `worker: V8 heap limit ${flagMb} MB (--max-old-space-size), ${limit} MB with V8's young generation`,
    };
  return {
    level: 'warn',
    message:
      `worker: V8 heap limit ${limit} MB, sized from the machine's memory: a migration's heap grows toward it. ` +
      `Start node with --max-old-space-size=${WORKER_HEAP_LIMIT_MB} (or NODE_OPTIONS) as npm run worker and the image do`,
  };
}
