import { sql } from 'kysely';

/**
 * A row still alive by its expiry column: none set, or later than the database's clock. One rule for client secrets,
 * the provider's artefacts and carried-over refresh tokens, read by the database's clock (not one process's).
 */
export const unexpired = (column: 'expiration' | 'expires_at') =>
  sql<boolean>`(${sql.ref(column)} is null or ${sql.ref(column)} > now())`;
