import { SCOPE_COLUMNS } from '../validation';
import { identifierProblem, uuidV5 } from '../identifiers';
import { countWrites, emptyPage, IN_LIST_LIMIT, type Pass, type PageResult } from '../types';

/** Duende stores shared secrets as base64 digests; the digest length says which one. */
export function tagSecret(value: string): string | undefined {
  const bytes = Buffer.from(value, 'base64');
  if (bytes.toString('base64') !== value.replace(/\s/g, '')) return undefined;
  if (bytes.length === 32) return `SHA256$${value}`;
  if (bytes.length === 64) return `SHA512$${value}`;
  return undefined;
}

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

/** Clients with their child tables, then ApiResources flattened into migration-created clients (audiences). Existing clients win. */
export const clientsPass: Pass = async ({ source, target, options }, cursorText) => {
  const page = emptyPage();
  if (!options.migrateClients) {
    page.warnings.push('MigrateClients is false: clients were not migrated');
    return page;
  }
  const pageSize = Math.min(options.pageSize, IN_LIST_LIMIT);
  const cursor: ClientCursor = cursorText ? (JSON.parse(cursorText) as ClientCursor) : { phase: 'clients', after: 0 };
  const clients: Array<{ clientId: string; row: Record<string, unknown>; secrets: ReturnType<typeof secretsFor> }> = [];

  if (cursor.phase === 'clients') {
    const rows = await source
      .selectFrom('Clients')
      .selectAll()
      .where('Id', '>', cursor.after)
      .orderBy('Id')
      .offset(0)
      .fetch(pageSize)
      .execute();
    page.read = rows.length;
    page.next = JSON.stringify(
      rows.length === pageSize
        ? { phase: 'clients', after: rows[rows.length - 1].Id }
        : { phase: 'resources', after: 0 },
    );
    if (rows.length > 0) {
      const ids = rows.map((r) => r.Id);
      const [secrets, scopes, redirects, logoutRedirects, grantTypes, origins, claims] = await Promise.all([
        source
          .selectFrom('ClientSecrets')
          .select(['ClientId', 'Value', 'Description', 'Expiration'])
          .where('ClientId', 'in', ids)
          .execute(),
        source.selectFrom('ClientScopes').select(['ClientId', 'Scope']).where('ClientId', 'in', ids).execute(),
        source
          .selectFrom('ClientRedirectUris')
          .select(['ClientId', 'RedirectUri'])
          .where('ClientId', 'in', ids)
          .execute(),
        source
          .selectFrom('ClientPostLogoutRedirectUris')
          .select(['ClientId', 'PostLogoutRedirectUri'])
          .where('ClientId', 'in', ids)
          .execute(),
        source.selectFrom('ClientGrantTypes').select(['ClientId', 'GrantType']).where('ClientId', 'in', ids).execute(),
        source.selectFrom('ClientCorsOrigins').select(['ClientId', 'Origin']).where('ClientId', 'in', ids).execute(),
        source.selectFrom('ClientClaims').select(['ClientId', 'Type', 'Value']).where('ClientId', 'in', ids).execute(),
      ]);
      for (const c of rows) {
        const problem = identifierProblem('client', c.ClientId);
        if (problem) {
          page.skipped++;
          page.warnings.push(problem);
          continue;
        }
        const { Id, ClientId, ClientName, Enabled, ...settings } = c;
        clients.push({
          clientId: ClientId,
          secrets: secretsFor(
            page,
            ClientId,
            secrets.filter((s) => s.ClientId === Id),
          ),
          row: {
            client_id: ClientId,
            client_name: ClientName,
            enabled: Enabled,
            settings: JSON.stringify(settings),
            allowed_scopes: JSON.stringify(scopes.filter((s) => s.ClientId === Id).map((s) => s.Scope)),
            redirect_uris: JSON.stringify(redirects.filter((s) => s.ClientId === Id).map((s) => s.RedirectUri)),
            post_logout_redirect_uris: JSON.stringify(
              logoutRedirects.filter((s) => s.ClientId === Id).map((s) => s.PostLogoutRedirectUri),
            ),
            grant_types: JSON.stringify(grantTypes.filter((s) => s.ClientId === Id).map((s) => s.GrantType)),
            cors_origins: JSON.stringify(origins.filter((s) => s.ClientId === Id).map((s) => s.Origin)),
            claims: JSON.stringify(
              claims.filter((s) => s.ClientId === Id).map((s) => ({ type: s.Type, value: s.Value })),
            ),
            origin: 'migration',
          },
        });
      }
    }
  } else {
    const resources = await source
      .selectFrom('ApiResources')
      .select(['Id', 'Name', 'DisplayName', 'Enabled'])
      .where('Id', '>', cursor.after)
      .orderBy('Id')
      .offset(0)
      .fetch(pageSize)
      .execute();
    page.read = resources.length;
    page.next =
      resources.length === pageSize
        ? JSON.stringify({ phase: 'resources', after: resources[resources.length - 1].Id })
        : null;
    if (resources.length > 0) {
      const ids = resources.map((r) => r.Id);
      const [scopes, secrets] = await Promise.all([
        source
          .selectFrom('ApiResourceScopes')
          .select(['ApiResourceId', 'Scope'])
          .where('ApiResourceId', 'in', ids)
          .execute(),
        source
          .selectFrom('ApiResourceSecrets')
          .select(['ApiResourceId', 'Value', 'Description', 'Expiration'])
          .where('ApiResourceId', 'in', ids)
          .execute(),
      ]);
      for (const r of resources) {
        clients.push({
          clientId: r.Name,
          secrets: secretsFor(
            page,
            r.Name,
            secrets.filter((s) => s.ApiResourceId === r.Id),
          ),
          row: {
            client_id: r.Name,
            client_name: r.DisplayName,
            enabled: r.Enabled,
            settings: JSON.stringify({ apiResource: true, audience: r.Name }),
            allowed_scopes: JSON.stringify(scopes.filter((s) => s.ApiResourceId === r.Id).map((s) => s.Scope)),
            grant_types: JSON.stringify([]),
            origin: 'migration',
          },
        });
      }
    }
  }
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
