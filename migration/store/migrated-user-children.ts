import { sql, type RawBuilder } from 'kysely';
import type { Db } from '../../platform/store/database';
import { insertSkippingExisting } from './insert-new';
import { JSON_ROWS, jsonRows } from './json-rows';
import type { MfaCredentialsTable } from '../../platform/store/schema';
import { userExists } from '../../platform/store/users';
import { tombstoned } from '../../platform/store/read-through-guards';

/**
 * The roles, external logins and MFA credentials the IdentityServer migration writes for its users. `createdBy`: a
 * CreateOnly run writes only for the users it created (a user that existed before the run is left as it is, children
 * included: after cutover its roles, logins and MFA are the service's); an Upsert run passes undefined. A user
 * deactivated here (a tombstone) gets nothing from the source under either mode.
 */
const writableUser = (userId: RawBuilder<unknown>, createdBy: string | undefined) =>
  sql<boolean>`(${userExists(userId, createdBy)} and not ${tombstoned(userId)})`;

/** Whether the run writes for any of these users; stops at the first that it does. */
export async function anyWritableUser(db: Db, ids: string[], createdBy: string | undefined): Promise<boolean> {
  const found =
    await sql`select from unnest(${ids}::text[]) as p(id) where ${writableUser(sql.ref('p.id'), createdBy)} limit 1`.execute(
      db,
    );
  return found.rows.length > 0;
}

/** Child rows to insert, keeping those of writable users only. */
function rowsOfWritableUsers<T extends 'user_roles' | 'user_logins' | 'mfa_credentials', C extends string>(
  table: T,
  columns: readonly C[],
  rows: ReadonlyArray<Record<C, unknown>>,
  createdBy: string | undefined,
) {
  return sql`${jsonRows(table, columns, rows)} where ${writableUser(sql.ref(`${JSON_ROWS}.user_id`), createdBy)}`;
}

/** Inserts child rows of writable users, skipping those a unique key holds already; returns the number written. */
export function insertUserChildren<C extends string>(
  db: Db,
  table: 'user_roles' | 'user_logins',
  columns: readonly C[],
  rows: ReadonlyArray<Record<C, unknown>>,
  createdBy: string | undefined,
): Promise<number> {
  return insertSkippingExisting(
    db
      .insertInto(table)
      .columns(columns as never)
      .expression(rowsOfWritableUsers(table, columns, rows, createdBy)),
    db.isTransaction,
  );
}

export type MigratedMfaCredential = Pick<MfaCredentialsTable, 'id' | 'user_id' | 'kind' | 'label' | 'secret'>;

/**
 * Inserts MFA credentials of writable users; a user who holds any MFA already, enrolled in the service or migrated
 * earlier, is skipped. Returns the number written.
 */
export function insertMfaCredentials(
  db: Db,
  rows: MigratedMfaCredential[],
  createdBy: string | undefined,
): Promise<number> {
  const columns = ['id', 'user_id', 'kind', 'label', 'secret'] as const;
  const notEnrolled = sql`${rowsOfWritableUsers('mfa_credentials', columns, rows, createdBy)} and not exists (select from mfa_credentials m where m.user_id = ${sql.ref(`${JSON_ROWS}.user_id`)} offset 0)`;
  return insertSkippingExisting(
    db.insertInto('mfa_credentials').columns(columns).expression(notEnrolled),
    db.isTransaction,
  );
}

/** The ids of the roles with these normalized names. */
export async function roleIdsByName(db: Db, normalizedNames: string[]): Promise<Map<string, string>> {
  if (normalizedNames.length === 0) return new Map();
  const roles = await db
    .selectFrom('roles')
    .select(['id', 'normalized_name'])
    .where('normalized_name', 'in', normalizedNames)
    .execute();
  return new Map(roles.map((r) => [r.normalized_name, r.id]));
}
