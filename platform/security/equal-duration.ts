import { setTimeout as sleep } from 'node:timers/promises';

/** Runs a step whose time is not the check's own (a look-up in another system): it neither sets nor meets the floor. */
export type Aside = <U>(step: () => Promise<U>) => Promise<U>;

/**
 * Makes each call of a check take as long as the slowest recent one, so its duration does not tell apart the cases it
 * decides between (no account, no password, a cheap migrated hash, an expensive one). The floor is the longest
 * duration seen, fading with a half-life so that one slow moment (a burst of load) does not slow every later check
 * for long; it never exceeds `ceilingMs`. Waiting costs no CPU. Time the check spends in `aside` steps is left out of
 * both its duration and its padding: a slow step that only some calls take (the read-through window's source look-up)
 * must not become the floor every other call is padded to; such a step evens out its own cases.
 *
 * A result the answer discloses anyway (`disclosed`: a right password, which the next page shows) is not padded:
 * its time tells no more than the answer does, so waiting would only slow it (under load, by the slowest queueing
 * delay of the last minute). Its duration still sets the floor, so the results that are padded wait exactly as long
 * as they would if every call waited.
 */
export function equalDuration({ halfLifeMs, ceilingMs }: { halfLifeMs: number; ceilingMs: number }) {
  let floorMs = 0;
  let floorAt = performance.now();
  return async function atFloor<T>(
    work: (aside: Aside) => Promise<T>,
    disclosed: (result: T) => boolean = () => false,
  ): Promise<T> {
    const started = performance.now();
    let asideMs = 0;
    const aside: Aside = async (step) => {
      const from = performance.now();
      try {
        return await step();
      } finally {
        asideMs += performance.now() - from;
      }
    };
    let done: { result: T } | undefined;
    try {
      done = { result: await work(aside) };
      return done.result;
    } finally {
      const now = performance.now();
      const took = now - started - asideMs;
      const faded = floorMs * 2 ** (-(now - floorAt) / halfLifeMs);
      floorMs = Math.min(ceilingMs, Math.max(took, faded));
      floorAt = now;
      if (floorMs > took && !(done && disclosed(done.result))) await sleep(floorMs - took);
    }
  };
}
