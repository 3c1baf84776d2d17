/** PostgreSQL's answers that the store turns into domain outcomes (SQLSTATE codes). */
const UNIQUE_VIOLATION = '23505';
const FOREIGN_KEY_VIOLATION = '23503';

const code = (error: unknown) => (error as { code?: string } | null)?.code;

/** A unique key already holds the value: a duplicate, not a fault. */
export const isUniqueViolation = (error: unknown) => code(error) === UNIQUE_VIOLATION;

/** The row refers to one that is gone (a user deleted meanwhile). */
export const isForeignKeyViolation = (error: unknown) => code(error) === FOREIGN_KEY_VIOLATION;

/**
 * The store could not be reached or dropped the connection under the query (SQLSTATE class 08, an administrator's or
 * a crash's shutdown, too many connections; a refused or reset socket; pg's own words for a connection that ended, never
 * came, or was lost while its client was checked out between two queries): nothing about the request itself, so the
 * client may send it again shortly.
 */
export function isStoreUnavailable(error: unknown): boolean {
  const c = code(error);
  if (c && (/^08/.test(c) || ['57P01', '57P02', '57P03', '53300', 'ECONNREFUSED', 'ECONNRESET'].includes(c)))
    return true;
  return /^(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error and is not queryable)/.test(
    (error as Error | null)?.message ?? '',
  );
}

/**
 * Data the store can never hold, whatever the retry: a data exception (SQLSTATE class 22: invalid text, a value out of
 * range, a string too long) or an integrity violation (class 23) other than the two the code handles as outcomes and
 * that a concurrent writer can cause (a unique or foreign-key violation, which a retry may resolve).
 */
export function isStoreDataError(error: unknown): boolean {
  const c = code(error);
  return c !== undefined && /^2[23][0-9A-Z]{3}$/.test(c) && c !== UNIQUE_VIOLATION && c !== FOREIGN_KEY_VIOLATION;
}
