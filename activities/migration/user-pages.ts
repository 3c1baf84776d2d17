import { sql, type Kysely, type SelectQueryBuilder } from 'kysely';
import type { SourceDatabase } from '../../migration-source/schema';

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
