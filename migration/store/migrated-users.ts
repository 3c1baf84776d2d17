import { sql } from 'kysely';
import type { Db } from '../../platform/store/database';
import { copyUnlessAnyExists } from './insert-new';
import { jsonRows } from './json-rows';
import type { NewUserRow } from '../../platform/store/schema';
import { userExists } from '../../platform/store/users';

/**
 * The users the IdentityServer migration writes. What to write and which of two duplicates wins is the users pass's
 * decision (migration/activities/passes/user-writes.ts); the queries are here.
 */

/** The users columns the migration writes, in COPY order. */
export const USER_COLUMNS = [
  'id',
  'email',
  'normalized_email',
  'user_name',
  'normalized_user_name',
  'first_name',
  'last_name',
  'company_name',
  'organization_id',
  'custom_attributes',
  'password_hash',
  'password_format',
  'migration_version',
  'two_factor_enabled',
  'email_confirmed',
  'lockout_end',
  'access_failed_count',
  'security_stamp',
] as const satisfies ReadonlyArray<keyof NewUserRow>;

export type MigratedUser = Required<Pick<NewUserRow, Exclude<(typeof USER_COLUMNS)[number], 'custom_attributes'>>> & {
  custom_attributes: Record<string, string>;
};

/** A user holding an e-mail address or user name one of the migrated rows has. */
export interface KeyHolder {
  id: string;
  email: string;
  normalized_email: string;
  normalized_user_name: string;
  migration_version: string | null;
}

/** The ids among these that name no user. */
export async function missingUserIds(db: Db, ids: string[]): Promise<string[]> {
  const missing = await sql<{
    id: string;
  }>`select u.id from unnest(${ids}::text[]) as u(id) where not ${userExists(sql.ref('u.id'))}`.execute(db);
  return missing.rows.map((r) => r.id);
}

/** Whether any user was created by this migration Version. */
export async function anyUserCreatedBy(db: Db, version: string): Promise<boolean> {
  return (
    (await db.selectFrom('users').select('id').where('migration_version', '=', version).limit(1).executeTakeFirst()) !==
    undefined
  );
}

/**
 * The users holding the e-mail addresses and user names of these rows, looked up by key: one index probe per row (a
 * lateral subquery behind `offset 0`; see userExists in users.ts for why).
 */
export async function keyHoldersOf(db: Db, rows: MigratedUser[]): Promise<KeyHolder[]> {
  const keys = sql<{
    email: string;
    user_name: string;
  }>`(select unnest(${rows.map((r) => r.normalized_email)}::text[]) as email, unnest(${rows.map((r) => r.normalized_user_name)}::text[]) as user_name)`;
  return db
    .selectFrom(keys.as('k'))
    .innerJoinLateral(
      (eb) =>
        eb
          .selectFrom('users')
          .select(['id', 'email', 'normalized_email', 'normalized_user_name', 'migration_version'])
          .where((w) =>
            w.or([w('normalized_email', '=', w.ref('k.email')), w('normalized_user_name', '=', w.ref('k.user_name'))]),
          )
          .offset(0)
          .as('t'),
      (join) => join.onTrue(),
    )
    .selectAll('t')
    .execute();
}

/** Removes those of the users that this migration Version created; returns the ones removed. */
export function removeUsersCreatedBy(db: Db, ids: string[], version: string) {
  return db
    .deleteFrom('users')
    .where('id', '=', sql<string>`any(${ids})`)
    .where('migration_version', '=', version)
    .returning(['id', 'email'])
    .execute();
}

/** One COPY of rows expected to be new: the number written, or undefined (nothing written) when a key exists. */
export const copyNewUsers = (db: Db, rows: MigratedUser[]) => copyUnlessAnyExists(db, 'users', USER_COLUMNS, rows);

/** An insert of the users from one JSON parameter: cheaper for PostgreSQL to plan than one row of parameters each. */
const insertUsers = (db: Db, rows: MigratedUser[]) =>
  db
    .insertInto('users')
    .columns(USER_COLUMNS)
    .expression(jsonRows('users', USER_COLUMNS, rows));

/**
 * Inserts the rows, every unique key refusing what exists (`on conflict do nothing` also keeps the first of two rows
 * sharing an e-mail); returns the ids inserted.
 */
export async function insertUsersSkippingHeld(db: Db, rows: MigratedUser[]): Promise<Set<string>> {
  const inserted = await insertUsers(db, rows)
    .onConflict((oc) => oc.doNothing())
    .returning('id')
    .execute();
  return new Set(inserted.map((r) => r.id));
}

/**
 * Writes the rows over the users with their ids (migration_version stays: it names the run that created the user;
 * two-step sign-in the user switched on in the service stays on). The rows' e-mail addresses and user names must be
 * free: `on conflict (id) do update` cannot skip a clash on another key.
 */
export async function upsertUsers(db: Db, rows: MigratedUser[]): Promise<{ created: number; updated: number }> {
  const written = await insertUsers(db, rows)
    .onConflict((oc) =>
      oc.column('id').doUpdateSet((eb) => ({
        email: eb.ref('excluded.email'),
        normalized_email: eb.ref('excluded.normalized_email'),
        user_name: eb.ref('excluded.user_name'),
        normalized_user_name: eb.ref('excluded.normalized_user_name'),
        first_name: eb.ref('excluded.first_name'),
        last_name: eb.ref('excluded.last_name'),
        company_name: eb.ref('excluded.company_name'),
        organization_id: eb.ref('excluded.organization_id'),
        custom_attributes: eb.ref('excluded.custom_attributes'),
        password_hash: eb.ref('excluded.password_hash'),
        password_format: eb.ref('excluded.password_format'),
        email_confirmed: eb.ref('excluded.email_confirmed'),
        lockout_end: eb.ref('excluded.lockout_end'),
        access_failed_count: eb.ref('excluded.access_failed_count'),
        // Once the user's sessions ended here the stamp is the service's: the source's would revive its old cookies.
        security_stamp: sql<string>`case when users.sessions_revoked_at is null then excluded.security_stamp else users.security_stamp end`,
        two_factor_enabled: sql<boolean>`users.two_factor_enabled or excluded.two_factor_enabled`,
        updated_at: new Date(),
      })),
    )
    .returning(sql<boolean>`(xmax = 0)`.as('inserted'))
    .execute();
  const created = written.filter((w) => w.inserted).length;
  return { created, updated: written.length - created };
}

/**
 * Of these ids, the migrated users with both sign-in flags off (as the schema change that added them left them).
 * One key probe per id (`offset 0` keeps the subquery from being planned as a join): `id = any(…)` or a join of a
 * whole page is planned as a scan of every user.
 */
export async function usersWithoutSignInFlags(db: Db, ids: string[]): Promise<Set<string>> {
  const stale = await sql<{ id: string }>`
    select page.id from unnest(${ids}::text[]) as page(id)
    where exists (
      select from users where users.id = page.id and users.migration_version is not null
        and not users.two_factor_enabled and not users.email_confirmed offset 0)`.execute(db);
  return new Set(stale.rows.map((u) => u.id));
}

/** Switches the flags on where a row has them on; never off, so the service's own changes stay. */
export async function raiseSignInFlags(
  db: Db,
  rows: Array<{ id: string; two_factor_enabled: boolean; email_confirmed: boolean }>,
): Promise<void> {
  await sql`
    update users set
      two_factor_enabled = users.two_factor_enabled or source.two_factor_enabled,
      email_confirmed = users.email_confirmed or source.email_confirmed
    from (${jsonRows('users', ['id', 'two_factor_enabled', 'email_confirmed'], rows)}) as source
    where users.id = source.id`.execute(db);
}
