/** What the migration reads of the source's ASP.NET Identity users, a page at a time. */
import { sql, type Kysely, type SelectQueryBuilder } from 'kysely';
import type { SourceDatabase } from './source-schema';

/**
 * The user-keyed passes (users, user-roles, logins, MFA) page through source users by `Id`, each partition covering
 * the keys in (after, until]. A page's child rows are exactly those whose `UserId` lies in (cursor, last id of the
 * page]: one index range scan per child table, where an IN list of the page's ids would cost a parameter per user
 * (SQL Server allows 2,100) and a probe per id.
 */
export interface UserPageBounds {
  /** Exclusive lower bound: the previous page's last id, or the partition's start; null from the first user. */
  after: string | null;
  /** Inclusive upper bound: the partition's end; null to the last user. */
  until: string | null;
}

/** The next page of source users within the bounds, in key order. */
export function withinUserPage<O>(
  query: SelectQueryBuilder<SourceDatabase, 'AspNetUsers', O>,
  bounds: UserPageBounds,
  pageSize: number,
) {
  let bounded = query.orderBy('Id').offset(0).fetch(pageSize);
  if (bounds.after !== null) bounded = bounded.where('Id', '>', bounds.after);
  if (bounds.until !== null) bounded = bounded.where('Id', '<=', bounds.until);
  return bounded;
}

/** The ids of the next page of source users (an index-only read). */
export async function readUserIds(
  source: Kysely<SourceDatabase>,
  bounds: UserPageBounds,
  pageSize: number,
): Promise<string[]> {
  return (await withinUserPage(source.selectFrom('AspNetUsers').select('Id'), bounds, pageSize).execute()).map(
    (u) => u.Id,
  );
}

type UserChildTable = 'AspNetUserClaims' | 'AspNetUserLogins' | 'AspNetUserRoles' | 'AspNetUserTokens';

/** Child rows of the users of a page: `UserId` in (after, last]. */
export function ofUserPage<T extends UserChildTable, O>(
  query: SelectQueryBuilder<SourceDatabase, T, O>,
  after: string | null,
  last: string,
) {
  const bounded = after === null ? query : query.where(sql.ref('UserId'), '>', after);
  return bounded.where(sql.ref('UserId'), '<=', last);
}

export function parseUserCursor(cursor: string | null): string | null {
  return cursor === null ? null : (JSON.parse(cursor) as string);
}

/** ASP.NET Identity's sign-in state, which the users pass carries over. */
export const SIGN_IN_STATE_COLUMNS = [
  'EmailConfirmed',
  'TwoFactorEnabled',
  'LockoutEnd',
  'AccessFailedCount',
  'SecurityStamp',
] as const;

const userRows = (source: Kysely<SourceDatabase>) =>
  source.selectFrom('AspNetUsers').select(['Id', 'UserName', 'Email', 'PasswordHash', ...SIGN_IN_STATE_COLUMNS]);

/** The users of a page, by key range. */
export const readUsersOfPage = (source: Kysely<SourceDatabase>, bounds: UserPageBounds, pageSize: number) =>
  withinUserPage(userRows(source), bounds, pageSize).execute();

/** Some users by id, in key order: a delta sweep's few new users of a page. */
export const readUsersById = (source: Kysely<SourceDatabase>, ids: string[]) =>
  userRows(source).where('Id', 'in', ids).orderBy('Id').execute();

/**
 * The claims of a page's users, by key range or by id, without the claim types the migration drops: each claim row
 * costs the worker more to parse than anything else it does for a user. The exact spellings are enough here; other
 * casings are dropped as they are folded.
 */
export function readClaims(
  source: Kysely<SourceDatabase>,
  users: { after: string | null; last: string } | { ids: string[] },
  dropped: Iterable<string>,
) {
  const claims = source
    .selectFrom('AspNetUserClaims')
    .select(['UserId', 'ClaimType', 'ClaimValue'])
    .where('ClaimType', 'not in', [...dropped]);
  return (
    'ids' in users ? claims.where('UserId', 'in', users.ids) : ofUserPage(claims, users.after, users.last)
  ).execute();
}

/** The ids among these in the source's key order. */
export async function inKeyOrder(source: Kysely<SourceDatabase>, ids: string[]): Promise<string[]> {
  return (await source.selectFrom('AspNetUsers').select('Id').where('Id', 'in', ids).orderBy('Id').execute()).map(
    (u) => u.Id,
  );
}

/** The users of a page with two-step sign-in or a confirmed e-mail on. */
export const readUsersWithSignInFlags = (source: Kysely<SourceDatabase>, bounds: UserPageBounds, pageSize: number) =>
  withinUserPage(
    source
      .selectFrom('AspNetUsers')
      .select(['Id', 'TwoFactorEnabled', 'EmailConfirmed'])
      .where((eb) => eb.or([eb('TwoFactorEnabled', '=', true), eb('EmailConfirmed', '=', true)])),
    bounds,
    pageSize,
  ).execute();

/** The role assignments of a page's users. */
export const readUserRoles = (source: Kysely<SourceDatabase>, after: string | null, last: string) =>
  ofUserPage(source.selectFrom('AspNetUserRoles').select(['UserId', 'RoleId']), after, last).execute();

/** The names of these roles. */
export const readRoleNames = (source: Kysely<SourceDatabase>, roleIds: string[]) =>
  source.selectFrom('AspNetRoles').select(['Id', 'Name']).where('Id', 'in', roleIds).execute();

/** The external logins of a page's users. */
export const readUserLogins = (source: Kysely<SourceDatabase>, after: string | null, last: string) =>
  ofUserPage(
    source.selectFrom('AspNetUserLogins').select(['LoginProvider', 'ProviderKey', 'ProviderDisplayName', 'UserId']),
    after,
    last,
  ).execute();

/** ASP.NET Identity's authenticator key and recovery codes, the MFA credentials the mfa pass migrates. */
const mfaTokens = (source: Kysely<SourceDatabase>) =>
  source
    .selectFrom('AspNetUserTokens')
    .where('LoginProvider', '=', '[AspNetUserStore]')
    .where('Name', 'in', ['AuthenticatorKey', 'RecoveryCodes']);

/** The MFA credentials of a page's users. */
export const readMfaTokens = (source: Kysely<SourceDatabase>, after: string | null, last: string) =>
  ofUserPage(mfaTokens(source).select(['UserId', 'Name', 'Value']), after, last).execute();

/** Whether the source holds any MFA credential. OFFSET … FETCH NEXT, the row limit SQL Server and PostgreSQL share. */
export async function anyMfaToken(source: Kysely<SourceDatabase>): Promise<boolean> {
  return (await mfaTokens(source).select('UserId').orderBy('UserId').offset(0).fetch(1).execute()).length > 0;
}

/** How many users the source has. */
export async function countUsers(source: Kysely<SourceDatabase>): Promise<number> {
  const { users } = await source
    .selectFrom('AspNetUsers')
    .select((eb) => eb.fn.countAll<number>().as('users'))
    .executeTakeFirstOrThrow();
  return Number(users);
}

/** The id of the user at this position of the key order. */
export async function userIdAt(source: Kysely<SourceDatabase>, position: number): Promise<string | undefined> {
  return (
    await source.selectFrom('AspNetUsers').select('Id').orderBy('Id').offset(position).fetch(1).executeTakeFirst()
  )?.Id;
}

/** The normalized e-mail addresses that more than one source user has, with how many. */
export const readDuplicateEmails = (source: Kysely<SourceDatabase>) =>
  source
    .selectFrom('AspNetUsers')
    .select((eb) => ['NormalizedEmail', eb.fn.countAll<number>().as('count')])
    .where('NormalizedEmail', 'is not', null)
    .groupBy('NormalizedEmail')
    .having((eb) => eb.fn.countAll(), '>', 1)
    .orderBy('NormalizedEmail')
    .execute();

/**
 * The source user with this e-mail, as ASP.NET Identity finds one (NormalizedEmail, upper-cased), and the id before
 * it in key order: the bounds (before, id] that hold only this user for the user-keyed passes. Undefined when there
 * is none; 'several' when several users share the address (the migration reports those; none of them is guessed at).
 */
export async function findUserBoundsByEmail(
  source: Kysely<SourceDatabase>,
  email: string,
): Promise<{ id: string; before: string | null } | 'several' | undefined> {
  const matches = await source
    .selectFrom('AspNetUsers')
    .select('Id')
    .where('NormalizedEmail', '=', email.toUpperCase())
    .orderBy('Id')
    .offset(0)
    .fetch(2)
    .execute();
  if (matches.length === 0) return undefined;
  if (matches.length > 1) return 'several';
  const id = matches[0].Id;
  const before = await source
    .selectFrom('AspNetUsers')
    .select((eb) => eb.fn.max('Id').as('id'))
    .where('Id', '<', id)
    .executeTakeFirst();
  return { id, before: (before?.id as string | null | undefined) ?? null };
}

/**
 * The source users that could hold one of these keys (e-mail addresses and user names, upper-cased) once migrated,
 * found by the columns the source normalized them into; the caller normalizes as the target does. What a dry run,
 * which writes nothing, reads to find the duplicates the real run would meet in the rows it wrote before. Asked in
 * slices: SQL Server takes at most 2,100 parameters a query.
 */
export async function usersSharingKeys(
  source: Kysely<SourceDatabase>,
  keys: string[],
): Promise<Array<{ Id: string; Email: string | null; UserName: string | null }>> {
  const unique = [...new Set(keys)];
  const found = [];
  for (let i = 0; i < unique.length; i += SHARING_SLICE) {
    const slice = unique.slice(i, i + SHARING_SLICE);
    found.push(
      ...(await source
        .selectFrom('AspNetUsers')
        .select(['Id', 'Email', 'UserName'])
        .where((eb) => eb.or([eb('NormalizedEmail', 'in', slice), eb('NormalizedUserName', 'in', slice)]))
        .execute()),
    );
  }
  return found;
}

/** Keys a slice of usersSharingKeys asks about: each is a parameter twice. */
const SHARING_SLICE = 1000;
