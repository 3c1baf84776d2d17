import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Makes each call of a check take as long as the slowest recent one, so its duration does not tell apart the cases it
 * decides between (no account, no password, a cheap migrated hash, an expensive one). The floor is the longest
 * duration seen, fading with a half-life so that one slow moment (a burst of load) does not slow every later check
 * for long; it never exceeds `ceilingMs`. Waiting costs no CPU.
 */
export function equalDuration({ halfLifeMs, ceilingMs }: { halfLifeMs: number; ceilingMs: number }) {
  let floorMs = 0;
  let floorAt = performance.now();
  return async function atFloor<T>(work: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await work();
    } finally {
      const now = performance.now();
      const took = now - started;
      const faded = floorMs * 2 ** (-(now - floorAt) / halfLifeMs);
      floorMs = Math.min(ceilingMs, Math.max(took, faded));
      floorAt = now;
      if (floorMs > took) await sleep(floorMs - took);
    }
  };
}
