import { publicClientGrantProblem, unofferedGrantTypes } from '../../../config/client-rules';
import { tagSecret } from '../../../security/client-secrets';
import { SCOPE_COLUMNS } from '../validation';
import { identifierProblem, uuidV5 } from '../identifiers';
import type { Kysely, Selectable } from 'kysely';
import type { SourceDatabase } from '../../../migration-source/schema';
import { countWrites, emptyPage, idPage, IN_LIST_LIMIT, type Pass, type PageResult } from '../types';

/** ApiScopes + IdentityResources, and the claims of ApiResources as migration-created scopes; seeded names win. */
export const scopesPass: Pass = async ({ source, target, options }) => {
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
  const page: PageResult = { ...emptyPage(), read: apiScopes.length + identity.length + resources.length };
  const rows = [
    ...identity.map((s) => ({
      s,
      kind: 'identity' as const,
      claims: identityClaims.filter((c) => c.IdentityResourceId === s.Id).map((c) => c.Type),
    })),
    ...apiScopes.map((s) => ({
      s,
      kind: 'api' as const,
      claims: apiScopeClaims.filter((c) => c.ScopeId === s.Id).map((c) => c.Type),
    })),
    ...resources
      .map((r) => ({
        s: { ...r, Required: false, Emphasize: false, ShowInDiscoveryDocument: true },
        kind: 'resource' as const,
        claims: resourceClaims.filter((c) => c.ApiResourceId === r.Id).map((c) => c.Type),
      }))
      .filter((r) => r.claims.length > 0),
  ].map(({ s, kind, claims }) => ({
    name: s.Name,
    kind,
    display_name: s.DisplayName,
    description: s.Description,
    enabled: s.Enabled,
    required: s.Required,
    emphasize: s.Emphasize,
    show_in_discovery: s.ShowInDiscoveryDocument,
    user_claims: JSON.stringify(claims),
    origin: 'migration',
  }));
  const unique = rows.filter((row, i) => rows.findIndex((r) => r.name === row.name) === i);
  page.skipped += page.read - unique.length;
  if (unique.length === 0 || options.dryRun) return page;
  const written = await target
    .insertInto('scopes')
    .values(unique)
    .onConflict((oc) => oc.column('name').doNothing())
    .returning('name')
    .execute();
  countWrites(page, unique.length, written.length);
  return page;
};

interface ClientCursor {
  phase: 'clients' | 'resources';
  after: number;
}

type SecretRows = ReturnType<typeof secretsFor>;
interface MigratedClient {
  clientId: string;
  row: Record<string, unknown>;
  secrets: SecretRows;
}

function secretsFor(
  page: PageResult,
  clientId: string,
  secrets: Array<{ Value: string; Description: string | null; Expiration: Date | null }>,
) {
  const now = Date.now();
  const rows = [];
  for (const secret of secrets) {
    if (secret.Expiration && secret.Expiration.getTime() < now) continue;
    const tagged = tagSecret(secret.Value);
    if (!tagged) {
      page.warnings.push(`a secret of client ${clientId} is not a SHA-256 or SHA-512 digest and was dropped`);
      continue;
    }
    rows.push({
      id: uuidV5(`${clientId}:${tagged}`),
      client_id: clientId,
      value: tagged,
      description: secret.Description,
      expiration: secret.Expiration,
    });
  }
  return rows;
}

/** The rows of a child table that belong to a page of parents, by one IN list of the parents' ids. */
async function childRows<
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

const asJson = <Row, V>(rows: Row[], value: (row: Row) => V) => JSON.stringify(rows.map(value));

/** A page of Clients with their child tables. */
async function clientsPage(source: Kysely<SourceDatabase>, page: PageResult, after: number, pageSize: number) {
  const rows = await idPage(source, 'Clients', after, pageSize);
  const ids = rows.map((r) => r.Id);
  if (ids.length === 0) return { rows, clients: [] };
  const [secrets, scopes, redirects, logoutRedirects, grantTypes, origins, claims] = await Promise.all([
    childRows(source, 'ClientSecrets', 'ClientId', ['Value', 'Description', 'Expiration'], ids),
    childRows(source, 'ClientScopes', 'ClientId', ['Scope'], ids),
    childRows(source, 'ClientRedirectUris', 'ClientId', ['RedirectUri'], ids),
    childRows(source, 'ClientPostLogoutRedirectUris', 'ClientId', ['PostLogoutRedirectUri'], ids),
    childRows(source, 'ClientGrantTypes', 'ClientId', ['GrantType'], ids),
    childRows(source, 'ClientCorsOrigins', 'ClientId', ['Origin'], ids),
    childRows(source, 'ClientClaims', 'ClientId', ['Type', 'Value'], ids),
  ]);
  const clients: MigratedClient[] = [];
  for (const c of rows) {
    const problem = identifierProblem('client', c.ClientId);
    if (problem) {
      page.skipped++;
      page.warnings.push(problem);
      continue;
    }
    const { Id, ClientId, ClientName, Enabled, ...settings } = c;
    const granted = grantTypes(Id).map((g) => g.GrantType);
    const publicProblem = publicClientGrantProblem({
      RequireClientSecret: settings.RequireClientSecret,
      AllowedGrantTypes: granted,
    });
    if (publicProblem)
      page.warnings.push(
        `client ${ClientId}: ${publicProblem}; it is migrated without that grant (its token requests for it are refused)`,
      );
    const unoffered = unofferedGrantTypes(granted);
    if (unoffered.length > 0)
      page.warnings.push(
        `client ${ClientId} uses grant types this service does not offer (${unoffered.join(', ')}): it is migrated, and its requests of those kinds are refused with unsupported_grant_type or unsupported_response_type`,
      );
    clients.push({
      clientId: ClientId,
      secrets: secretsFor(page, ClientId, secrets(Id)),
      row: {
        client_id: ClientId,
        client_name: ClientName,
        enabled: Enabled,
        settings: JSON.stringify(settings),
        allowed_scopes: asJson(scopes(Id), (s) => s.Scope),
        redirect_uris: asJson(redirects(Id), (s) => s.RedirectUri),
        post_logout_redirect_uris: asJson(logoutRedirects(Id), (s) => s.PostLogoutRedirectUri),
        grant_types: asJson(grantTypes(Id), (s) => s.GrantType),
        cors_origins: asJson(origins(Id), (s) => s.Origin),
        claims: asJson(claims(Id), (s) => ({ type: s.Type, value: s.Value })),
        origin: 'migration',
      },
    });
  }
  return { rows, clients };
}

/** A page of ApiResources, each flattened into a migration-created client named for the audience. */
async function apiResourcesPage(source: Kysely<SourceDatabase>, page: PageResult, after: number, pageSize: number) {
  const rows = await idPage(source, 'ApiResources', after, pageSize);
  const ids = rows.map((r) => r.Id);
  if (ids.length === 0) return { rows, clients: [] };
  const [scopes, secrets] = await Promise.all([
    childRows(source, 'ApiResourceScopes', 'ApiResourceId', ['Scope'], ids),
    childRows(source, 'ApiResourceSecrets', 'ApiResourceId', ['Value', 'Description', 'Expiration'], ids),
  ]);
  const clients: MigratedClient[] = rows.map((r) => ({
    clientId: r.Name,
    secrets: secretsFor(page, r.Name, secrets(r.Id)),
    row: {
      client_id: r.Name,
      client_name: r.DisplayName,
      enabled: r.Enabled,
      settings: JSON.stringify({ apiResource: true, audience: r.Name }),
      allowed_scopes: asJson(scopes(r.Id), (s) => s.Scope),
      grant_types: JSON.stringify([]),
      origin: 'migration',
    },
  }));
  return { rows, clients };
}

/** Clients with their child tables, then ApiResources flattened into migration-created clients (audiences). Existing clients win. */
export const clientsPass: Pass = async ({ source, target, options }, cursorText) => {
  const page = emptyPage();
  if (!options.migrateClients) {
    page.warnings.push('MigrateClients is false: clients were not migrated');
    return page;
  }
  const pageSize = Math.min(options.pageSize, IN_LIST_LIMIT);
  const cursor: ClientCursor = cursorText ? (JSON.parse(cursorText) as ClientCursor) : { phase: 'clients', after: 0 };
  const readPage = cursor.phase === 'clients' ? clientsPage : apiResourcesPage;
  const { rows, clients } = await readPage(source, page, cursor.after, pageSize);
  page.read = rows.length;
  const next: ClientCursor | null =
    rows.length === pageSize
      ? { phase: cursor.phase, after: rows[rows.length - 1].Id }
      : cursor.phase === 'clients'
        ? { phase: 'resources', after: 0 }
        : null;
  page.next = next && JSON.stringify(next);
  if (clients.length === 0 || options.dryRun) return page;

  await target.transaction().execute(async (trx) => {
    const written = await trx
      .insertInto('clients')
      .values(clients.map((c) => c.row as never))
      .onConflict((oc) => oc.column('client_id').doNothing())
      .returning('client_id')
      .execute();
    const created = new Set(written.map((w) => w.client_id));
    countWrites(page, clients.length, created.size);
    const secrets = clients.filter((c) => created.has(c.clientId)).flatMap((c) => c.secrets);
    if (secrets.length > 0)
      await trx
        .insertInto('client_secrets')
        .values(secrets)
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
  });
  return page;
};
