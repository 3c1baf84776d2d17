/**
 * The promise's value, or a rejection with `late()` once `ms` have passed without one. The timer goes with the race,
 * so a call that answers in time leaves nothing pending.
 */
export async function within<T>(ms: number, promise: Promise<T>, late: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), Math.max(ms, 0));
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
