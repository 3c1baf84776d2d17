import type { Selectable } from 'kysely';
import type { Db } from '../../platform/store/database';
import type { Database } from '../../platform/store/schema';

type CountedTable =
  'users' | 'user_logins' | 'user_roles' | 'mfa_credentials' | 'clients' | 'client_secrets' | 'grants' | 'sso_domains';

/** How many rows a table of the store holds. */
export async function countRows(db: Db, table: CountedTable): Promise<number> {
  const { n } = await db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirstOrThrow();
  return Number(n);
}

/** The marker a migration run with this version wrote. */
export function markerOf(db: Db, version: string) {
  return db.selectFrom('migration_markers').selectAll().where('version', '=', version).executeTakeFirstOrThrow();
}

/** The stored row of a provisioning app. */
export function storedAppRow(db: Db, appId: string) {
  return db.selectFrom('provisioning_apps').selectAll().where('app_id', '=', appId).executeTakeFirstOrThrow();
}

/** The rows of a store table whose columns hold these values: a test's look at what the service stored. */
export function rowsWhere<T extends keyof Database>(
  db: Db,
  table: T,
  where: Partial<Record<keyof Database[T], unknown>>,
): Promise<Array<Selectable<Database[T]>>> {
  let query = db.selectFrom(table as 'users').selectAll();
  for (const [column, value] of Object.entries(where)) query = query.where(column as 'id', '=', value as string);
  return query.execute() as unknown as Promise<Array<Selectable<Database[T]>>>;
}
