/** PostgreSQL's answers that the store turns into domain outcomes (SQLSTATE codes). */
const UNIQUE_VIOLATION = '23505';
const FOREIGN_KEY_VIOLATION = '23503';

const code = (error: unknown) => (error as { code?: string } | null)?.code;

/** A unique key already holds the value: a duplicate, not a fault. */
export const isUniqueViolation = (error: unknown) => code(error) === UNIQUE_VIOLATION;

/** The row refers to one that is gone (a user deleted meanwhile). */
export const isForeignKeyViolation = (error: unknown) => code(error) === FOREIGN_KEY_VIOLATION;
