import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { InsertQueryBuilder, InsertResult } from 'kysely';
import { from as copyFrom } from 'pg-copy-streams';
import { poolOf, type Db } from '../../platform/store/database';
import type { Database } from '../../platform/store/schema';
import { isUniqueViolation } from '../../platform/store/errors';

/** Runs a write that fails as a whole when a unique key of one of its rows exists: undefined then, else its result. */
async function unlessAnyExists<T>(write: () => Promise<T>): Promise<T | undefined> {
  try {
    return await write();
  } catch (error) {
    if (isUniqueViolation(error)) return undefined;
    throw error;
  }
}

async function rowsWritten<DB, TB extends keyof DB>(insert: InsertQueryBuilder<DB, TB, InsertResult>): Promise<number> {
  return Number((await insert.executeTakeFirstOrThrow()).numInsertedOrUpdatedRows ?? 0);
}

/**
 * A plain insert of rows that are expected to be new: the number written, or undefined when a unique key of one of
 * them exists, in which case the statement has written nothing. Cheaper than `on conflict do nothing`, whose
 * speculative insertion checks and confirms every row (docs/benchmarks.md has the figures).
 */
export async function insertUnlessAnyExists<DB, TB extends keyof DB>(
  insert: InsertQueryBuilder<DB, TB, InsertResult>,
): Promise<number | undefined> {
  return unlessAnyExists(() => rowsWritten(insert));
}

/**
 * Inserts the rows, skipping those whose unique keys exist; returns the number written. Within a transaction (a dry
 * run's, rolled back) a failed statement would abort it, so the rows go in with `on conflict do nothing` at once.
 */
export async function insertSkippingExisting<DB, TB extends keyof DB>(
  insert: InsertQueryBuilder<DB, TB, InsertResult>,
  inTransaction = false,
): Promise<number> {
  const written = inTransaction ? undefined : await insertUnlessAnyExists(insert);
  return written ?? rowsWritten(insert.onConflict((oc) => oc.doNothing()));
}

const ESCAPED = /[\\\n\r\t]/g;
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\n': '\\n', '\r': '\\r', '\t': '\\t' };

/** A value in COPY's text format: `\N` for null, objects as JSON (for json and jsonb columns). */
function copyField(value: unknown): string {
  if (value === null || value === undefined) return '\\N';
  const text =
    typeof value === 'string'
      ? value
      : value instanceof Date
        ? value.toISOString()
        : typeof value === 'object'
          ? JSON.stringify(value)
          : `${value as number | boolean | bigint}`;
  return text.replace(ESCAPED, (c) => ESCAPES[c]);
}

/**
 * insertUnlessAnyExists through `COPY … FROM STDIN`: PostgreSQL reads COPY's text format at a fraction of what
 * parsing the same rows as a JSON parameter costs it (docs/benchmarks.md has the figures). Like a plain
 * insert it writes all rows or, when a unique key exists, none.
 */
export async function copyUnlessAnyExists<T extends keyof Database, C extends string>(
  db: Db,
  table: T,
  columns: readonly C[],
  rows: ReadonlyArray<Record<C, unknown>>,
): Promise<number | undefined> {
  let text = '';
  for (const row of rows) text += `${columns.map((c) => copyField(row[c])).join('\t')}\n`;
  const client = await poolOf(db).connect();
  let failure: Error | undefined;
  try {
    return await unlessAnyExists(async () => {
      const copy = client.query(copyFrom(`copy ${table} (${columns.join(', ')}) from stdin`));
      await pipeline(Readable.from([text]), copy);
      return Number(copy.rowCount);
    });
  } catch (error) {
    failure = error as Error;
    throw error;
  } finally {
    // A connection that failed otherwise than on a key is not handed out again.
    client.release(failure);
  }
}
