import type { Kysely, Selectable } from 'kysely';
import { sql } from 'kysely';
import type { SourceDatabase } from './source-schema';

/** What the migration reads of the source's IdentityServer configuration and operational data. */

/** The columns ApiScopes and IdentityResources share, which the scopes pass reads from both. */
export const SCOPE_COLUMNS = [
  'Id',
  'Enabled',
  'Name',
  'DisplayName',
  'Description',
  'Required',
  'Emphasize',
  'ShowInDiscoveryDocument',
] as const;

/** ApiScopes, IdentityResources and ApiResources with their claim types: small tables, read whole. */
export async function readScopeSources(source: Kysely<SourceDatabase>) {
  const [apiScopes, apiScopeClaims, identity, identityClaims, resources, resourceClaims] = await Promise.all([
    source
      .selectFrom('ApiScopes')
      .select([...SCOPE_COLUMNS])
      .orderBy('Id')
      .execute(),
    source.selectFrom('ApiScopeClaims').select(['ScopeId', 'Type']).execute(),
    source
      .selectFrom('IdentityResources')
      .select([...SCOPE_COLUMNS])
      .orderBy('Id')
      .execute(),
    source.selectFrom('IdentityResourceClaims').select(['IdentityResourceId', 'Type']).execute(),
    source
      .selectFrom('ApiResources')
      .select(['Id', 'Enabled', 'Name', 'DisplayName', 'Description'])
      .orderBy('Id')
      .execute(),
    source.selectFrom('ApiResourceClaims').select(['ApiResourceId', 'Type']).execute(),
  ]);
  return { apiScopes, apiScopeClaims, identity, identityClaims, resources, resourceClaims };
}

/** One page of a whole source table by its `Id` (string or number), after `after` (from the start when undefined). */
export async function idPage<T extends keyof SourceDatabase>(
  source: Kysely<SourceDatabase>,
  table: T,
  after: string | number | undefined,
  pageSize: number,
) {
  // Kysely cannot narrow a generic table name: the query is typed by the key it pages on, the rows by the table.
  const untyped = source as unknown as Kysely<Record<string, { Id: string }>>;
  return (await untyped
    .selectFrom(table as string)
    .selectAll()
    .$if(after !== undefined, (q) => q.where('Id', '>', after as string))
    .orderBy('Id')
    .offset(0)
    .fetch(pageSize)
    .execute()) as Array<Selectable<SourceDatabase[T]>>;
}

/** The rows of a child table that belong to a page of parents, by one IN list of the parents' ids. */
export async function childRows<
  T extends keyof SourceDatabase,
  P extends keyof Selectable<SourceDatabase[T]> & string,
  C extends keyof Selectable<SourceDatabase[T]> & string,
>(source: Kysely<SourceDatabase>, table: T, parent: P, columns: C[], ids: number[]) {
  // Kysely cannot narrow a generic table name: the query runs untyped, the rows are typed by the table.
  const untyped = source as unknown as Kysely<Record<string, Record<string, number>>>;
  const rows = (await untyped
    .selectFrom(table as string)
    .select([parent, ...columns] as string[])
    .where(parent as string, 'in', ids)
    .execute()) as unknown as Array<Pick<Selectable<SourceDatabase[T]>, P | C>>;
  return (id: number) => rows.filter((r) => (r[parent] as unknown) === id);
}

/** A page of Clients with their child tables, each child table as a lookup by the client's `Id`. */
export async function readClientsPage(source: Kysely<SourceDatabase>, after: number, pageSize: number) {
  const rows = await idPage(source, 'Clients', after, pageSize);
  const ids = rows.map((r) => r.Id);
  if (ids.length === 0) return { rows, children: undefined };
  const [secrets, scopes, redirects, logoutRedirects, grantTypes, origins, claims] = await Promise.all([
    childRows(source, 'ClientSecrets', 'ClientId', ['Value', 'Description', 'Expiration'], ids),
    childRows(source, 'ClientScopes', 'ClientId', ['Scope'], ids),
    childRows(source, 'ClientRedirectUris', 'ClientId', ['RedirectUri'], ids),
    childRows(source, 'ClientPostLogoutRedirectUris', 'ClientId', ['PostLogoutRedirectUri'], ids),
    childRows(source, 'ClientGrantTypes', 'ClientId', ['GrantType'], ids),
    childRows(source, 'ClientCorsOrigins', 'ClientId', ['Origin'], ids),
    childRows(source, 'ClientClaims', 'ClientId', ['Type', 'Value'], ids),
  ]);
  return { rows, children: { secrets, scopes, redirects, logoutRedirects, grantTypes, origins, claims } };
}

/** A page of ApiResources with their scopes and secrets, each as a lookup by the resource's `Id`. */
export async function readApiResourcesPage(source: Kysely<SourceDatabase>, after: number, pageSize: number) {
  const rows = await idPage(source, 'ApiResources', after, pageSize);
  const ids = rows.map((r) => r.Id);
  if (ids.length === 0) return { rows, children: undefined };
  const [scopes, secrets] = await Promise.all([
    childRows(source, 'ApiResourceScopes', 'ApiResourceId', ['Scope'], ids),
    childRows(source, 'ApiResourceSecrets', 'ApiResourceId', ['Value', 'Description', 'Expiration'], ids),
  ]);
  return { rows, children: { scopes, secrets } };
}

/** Whether the source table has the column: INFORMATION_SCHEMA, the same on SQL Server and PostgreSQL. */
export async function hasColumn(source: Kysely<SourceDatabase>, table: string, column: string): Promise<boolean> {
  const found = await sql<{
    n: number;
  }>`select count(*) as n from INFORMATION_SCHEMA.COLUMNS where TABLE_NAME = ${table} and COLUMN_NAME = ${column}`.execute(
    source,
  );
  return Number(found.rows[0]?.n ?? 0) > 0;
}

/** The key PersistedGrants pages by: before Duende IdentityServer 6.1 the table had no Id, and Key was its primary key. */
export async function grantKeyColumn(source: Kysely<SourceDatabase>): Promise<'Id' | 'Key'> {
  return (await hasColumn(source, 'PersistedGrants', 'Id')) ? 'Id' : 'Key';
}

/** What the migration reads of a PersistedGrants row. */
const GRANT_COLUMNS = [
  'Key',
  'Type',
  'SubjectId',
  'SessionId',
  'ClientId',
  'Description',
  'CreationTime',
  'Expiration',
  'ConsumedTime',
  'Data',
] as const;

/**
 * A page of the refresh tokens, after `after` in `keyColumn` order: every one, so the report can say why the expired
 * and consumed ones were not carried over.
 */
export const readRefreshTokens = (
  source: Kysely<SourceDatabase>,
  keyColumn: 'Id' | 'Key',
  after: unknown,
  pageSize: number,
) =>
  source
    .selectFrom('PersistedGrants')
    .select(GRANT_COLUMNS)
    .$if(keyColumn === 'Id', (q) => q.select('Id'))
    .where('Type', '=', 'refresh_token')
    .$if(after !== undefined, (q) => q.where(keyColumn, '>', after as string))
    .orderBy(keyColumn)
    .offset(0)
    .fetch(pageSize)
    .execute();

/** The refresh token stored under one of these keys (the source's hashes of a handle), whatever its state. */
export const readRefreshTokenByKeys = (source: Kysely<SourceDatabase>, keys: string[]) =>
  source
    .selectFrom('PersistedGrants')
    .select(GRANT_COLUMNS)
    .where('Type', '=', 'refresh_token')
    .where('Key', 'in', keys)
    .executeTakeFirst();
