import { sql, type RawBuilder } from 'kysely';
import { tombstoned } from '../../platform/store/read-through-guards';
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

/**
 * How many of the rows would replace a password the user's account here no longer shares with the source: re-hashed
 * at a sign-in, reset or changed since the user was migrated (an Upsert writes the source's hash over it).
 */
export async function passwordsChangedHere(
  db: Db,
  rows: ReadonlyArray<Pick<MigratedUser, 'id' | 'password_hash'>>,
): Promise<number> {
  if (rows.length === 0) return 0;
  const { rows: counted } = await sql<{ changed: string }>`
    select count(*) as changed from users
    join (${jsonRows('users', ['id', 'password_hash'], rows)}) as source on source.id = users.id
    where users.password_hash is distinct from source.password_hash`.execute(db);
  return Number(counted[0].changed);
}

/** What the target holds of a page's source users (usersInTarget). */
export interface PageInTarget {
  /** Ids no user has. */
  missing: Set<string>;
  /** Users deleted or deactivated here (source_user_tombstones). */
  tombstoned: Set<string>;
  /** For each of the conditions asked about, the existing users meeting it. */
  meeting: Array<Set<string>>;
}

/**
 * The target's side of a page of source users in one statement: one key probe per id (a lateral subquery behind
 * `offset 0`: a join of a whole page, or `id = any(…)`, is planned as a scan of every user). Only ids that are
 * missing, tombstoned or meet a condition come back, so an unchanged page answers with no rows.
 */
export async function usersInTarget(
  db: Db,
  ids: string[],
  conditions: Array<RawBuilder<boolean>>,
): Promise<PageInTarget> {
  const flags = conditions.map((_, i) => sql`coalesce(u.c${sql.raw(String(i))}, false)`);
  const found = await sql<{ id: string; missing: boolean; tombstoned: boolean; meets: boolean[] }>`
    select * from (
      select page.id, u.id is null as missing, ${tombstoned(sql.ref('page.id'))} as tombstoned,
        array[${sql.join([sql`false`, ...flags])}] as meets
      from unnest(${ids}::text[]) as page(id)
      left join lateral (
        select ${sql.join([sql.ref('users.id'), ...conditions.map((c, i) => sql`(${c}) as ${sql.raw(`c${i}`)}`)])}
        from users where users.id = page.id offset 0
      ) u on true
    ) s
    where s.missing or s.tombstoned or true = any(s.meets)`.execute(db);
  const state: PageInTarget = { missing: new Set(), tombstoned: new Set(), meeting: conditions.map(() => new Set()) };
  for (const row of found.rows) {
    if (row.missing) state.missing.add(row.id);
    if (row.tombstoned) state.tombstoned.add(row.id);
    // The array's first element is a placeholder: `array[]` of no conditions would have no type.
    for (let i = 0; i < conditions.length; i++) if (row.meets[i + 1]) state.meeting[i].add(row.id);
  }
  return state;
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
 * Migrated users with both sign-in flags off (as the schema change that added them left them), a condition on the
 * `users` row for usersInTarget.
 */
export const withoutSignInFlags = sql<boolean>`users.migration_version is not null
  and not users.two_factor_enabled and not users.email_confirmed`;

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

/**
 * Migrated users with no security stamp whose sessions nothing here has ended (users migrated before the stamp was
 * carried over, whose source cookies would otherwise never be carried over), a condition for usersInTarget.
 */
export const withoutSecurityStamp = sql<boolean>`users.migration_version is not null
  and users.security_stamp is null and users.sessions_revoked_at is null`;

/** Sets the source's stamp where the user still has none and nothing here has ended its sessions; else nothing. */
export async function fillSecurityStamps(db: Db, rows: Array<{ id: string; security_stamp: string }>): Promise<void> {
  await sql`
    update users set security_stamp = source.security_stamp
    from (${jsonRows('users', ['id', 'security_stamp'], rows)}) as source
    where users.id = source.id and users.security_stamp is null and users.sessions_revoked_at is null`.execute(db);
}
