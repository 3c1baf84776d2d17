import type { Db } from '../../platform/store/database';

/** Carries work's result out of the transaction it is rolled back with. */
class RolledBack<T> extends Error {
  constructor(readonly value: T) {
    super('rolled back on purpose');
  }
}

/**
 * Runs work against a transaction that is always rolled back, and returns what work returned: a dry run's writes
 * meet the target's unique keys and row filters exactly as the real run's would (so the counts are the real run's),
 * and nothing is committed.
 */
export async function withoutCommitting<T>(db: Db, work: (trx: Db) => Promise<T>): Promise<T> {
  try {
    await db.transaction().execute(async (trx) => {
      throw new RolledBack(await work(trx));
    });
  } catch (error) {
    if (error instanceof RolledBack) return error.value as T;
    throw error;
  }
  throw new Error('unreachable: the transaction always rolls back');
}
