import { sql } from 'kysely';
import type { Db } from '../../platform/store/database';
import { firstRow, prepared } from '../../platform/store/prepared';
import { normalize, PROFILE_COLUMNS } from '../../platform/store/users';

/** What sign-in reads of a user: identity, credential and the ASP.NET Identity sign-in state. */
export function findSignInUser(db: Db, email: string) {
  return db
    .selectFrom('users')
    .select([
      'id',
      'email',
      'active',
      'password_hash',
      'two_factor_enabled',
      'email_confirmed',
      'access_failed_count',
      'lockout_end',
      'security_stamp',
    ])
    .where('normalized_email', '=', normalize(email))
    .executeTakeFirst();
}

/** The user as the provider's claims see it: profile, organization, custom attributes and role names (one query). */
const FIND_CLAIMS_USER = prepared((db: Db, userId: string) =>
  db
    .selectFrom('users')
    .select([
      ...PROFILE_COLUMNS,
      'email_confirmed',
      'security_stamp',
      (eb) =>
        eb.fn
          .coalesce(
            eb
              .selectFrom('user_roles')
              .innerJoin('roles', 'roles.id', 'user_roles.role_id')
              .select(sql<string[]>`array_agg(roles.name order by roles.name)`.as('names'))
              .whereRef('user_roles.user_id', '=', 'users.id'),
            sql<string[]>`'{}'::text[]`,
          )
          .as('roles'),
    ])
    .where('id', '=', userId)
    .where('active', '=', true),
);

export function findClaimsUser(db: Db, userId: string) {
  return firstRow(db, FIND_CLAIMS_USER(db, userId));
}

export type ClaimsUser = NonNullable<Awaited<ReturnType<typeof findClaimsUser>>>;

/** A reserved sign-in attempt: whether reserving it locked the account (it was the last one allowed). */
export interface SignInReservation {
  locked: boolean;
}

/**
 * Counts an attempt as failed before its password or code is checked, in one statement, so parallel guesses cannot
 * outrun the lockout: at most `maxFailures` checks are ever reserved before the lock holds. The attempt that reaches
 * the limit locks the account for `minutes` (the count starts again then), as ASP.NET Identity's AccessFailedAsync
 * does. Undefined when the account is locked now (or gone): nothing may be checked.
 */
export async function reserveSignInAttempt(
  db: Db,
  userId: string,
  maxFailures: number,
  minutes: number,
): Promise<SignInReservation | undefined> {
  const reaches = sql<boolean>`access_failed_count + 1 >= ${maxFailures}`;
  const row = await db
    .updateTable('users')
    .set({
      access_failed_count: sql<number>`case when ${reaches} then 0 else access_failed_count + 1 end`,
      lockout_end: sql<Date | null>`case when ${reaches} then now() + make_interval(secs => ${minutes * 60}) else lockout_end end`,
    })
    .where('id', '=', userId)
    .where((eb) => eb.or([eb('lockout_end', 'is', null), eb('lockout_end', '<=', sql<Date>`now()`)]))
    .returning(sql<boolean>`lockout_end is not null and lockout_end > now()`.as('locked'))
    .executeTakeFirst();
  return row && { locked: row.locked };
}

/**
 * The reserved attempt succeeded: the failure count starts again (ASP.NET Identity's ResetAccessFailedCountAsync), and
 * a lock this very attempt set is lifted.
 */
export async function settleSignInSuccess(db: Db, userId: string, reservation: SignInReservation): Promise<void> {
  await db
    .updateTable('users')
    .set(reservation.locked ? { access_failed_count: 0, lockout_end: null } : { access_failed_count: 0 })
    .where('id', '=', userId)
    .execute();
}

/**
 * The reserved attempt was a right password that still needs its second factor: it is not a failure, and the count is
 * not cleared either (ASP.NET Identity resets it only once two-step verification is done), so one failure less.
 */
export async function releaseSignInAttempt(
  db: Db,
  userId: string,
  reservation: SignInReservation,
  maxFailures: number,
): Promise<void> {
  await db
    .updateTable('users')
    .set(
      reservation.locked
        ? { access_failed_count: Math.max(0, maxFailures - 1), lockout_end: null }
        : { access_failed_count: sql<number>`greatest(access_failed_count - 1, 0)` },
    )
    .where('id', '=', userId)
    .execute();
}

/** Replaces a migrated hash by the native one after the user signed in with it (spec: "upgraded on the next login"). */
export async function upgradePasswordHash(db: Db, userId: string, oldHash: string, nativeHash: string): Promise<void> {
  await db
    .updateTable('users')
    .set({ password_hash: nativeHash, password_format: null, updated_at: new Date() })
    .where('id', '=', userId)
    .where('password_hash', '=', oldHash)
    .execute();
}

/**
 * Records a sign-in attempt of a client address and says how many it made in the window, this one included. Parallel
 * attempts from one address, at any API process, take turns on an advisory lock, so each counts the others' rows
 * (count_sign_in_attempt, schema migration 0031: one round trip).
 */
export async function countSignInAttempt(db: Db, address: string, windowSeconds: number): Promise<number> {
  const counted = sql<{ n: string }>`select count_sign_in_attempt(${address}, ${windowSeconds}) as n`;
  return Number((await counted.execute(db)).rows[0].n);
}

export async function purgeSignInAttempts(db: Db, olderThanSeconds: number): Promise<void> {
  await db
    .deleteFrom('sign_in_attempts')
    .where('at', '<', sql<Date>`now() - make_interval(secs => ${olderThanSeconds})`)
    .execute();
}

/** The scopes store: every enabled scope with its kind and claim list. */
export function listScopes(db: Db) {
  return db
    .selectFrom('scopes')
    .select(['name', 'kind', 'user_claims', 'show_in_discovery'])
    .where('enabled', '=', true)
    .execute();
}

/**
 * A digest of what the provider is built from and reads only at construction: the enabled scopes with their claims,
 * and the API resources (enabled clients marked apiResource, with the scopes they serve). It changes when a migration
 * adds scopes or an API resource is added, disabled or changed. The signing keys have their own, looked at more often
 * (signingKeysVersion).
 */
export async function providerSettingsVersion(db: Db): Promise<string> {
  const { rows } = await sql<{ version: string }>`
    select md5(
      coalesce((select string_agg(name || ':' || kind || ':' || user_claims::text || ':' || show_in_discovery::text, ',' order by name)
                from scopes where enabled), '')
      || '|' ||
      coalesce((select string_agg(client_id || ':' || allowed_scopes::text, ',' order by client_id)
                from clients where enabled and settings->>'apiResource' = 'true'), '')
    ) as version`.execute(db);
  return rows[0].version;
}

/** Until when a user is locked out (null when not), or undefined for no such user. */
export async function findLockoutEnd(db: Db, userId: string): Promise<Date | null | undefined> {
  const row = await db.selectFrom('users').select('lockout_end').where('id', '=', userId).executeTakeFirst();
  return row?.lockout_end;
}

/** How the consent page names these scopes: DisplayName and Description, as configured or migrated. */
export function findScopeTexts(db: Db, names: string[]) {
  if (names.length === 0) return Promise.resolve([]);
  return db.selectFrom('scopes').select(['name', 'display_name', 'description']).where('name', 'in', names).execute();
}
