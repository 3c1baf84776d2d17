import type { InsertQueryBuilder, InsertResult } from 'kysely';

const UNIQUE_VIOLATION = '23505';

/**
 * A plain insert of rows that are expected to be new: the number written, or undefined when a unique key of one of
 * them exists, in which case the statement has written nothing. Cheaper than `on conflict do nothing`, whose
 * speculative insertion checks and confirms every row: 1M users took 19.7 s plainly and 35.3 s with it.
 */
export async function insertUnlessAnyExists<DB, TB extends keyof DB>(insert: InsertQueryBuilder<DB, TB, InsertResult>): Promise<number | undefined> {
  try {
    return Number((await insert.executeTakeFirstOrThrow()).numInsertedOrUpdatedRows ?? 0);
  } catch (error) {
    if ((error as { code?: unknown }).code === UNIQUE_VIOLATION) return undefined;
    throw error;
  }
}

/** Inserts the rows, skipping those whose unique keys exist; returns the number written. */
export async function insertSkippingExisting<DB, TB extends keyof DB>(insert: InsertQueryBuilder<DB, TB, InsertResult>): Promise<number> {
  const written = await insertUnlessAnyExists(insert);
  if (written !== undefined) return written;
  return Number((await insert.onConflict((oc) => oc.doNothing()).executeTakeFirstOrThrow()).numInsertedOrUpdatedRows ?? 0);
}
