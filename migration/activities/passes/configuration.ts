import {
  publicClientGrantProblem,
  unofferedGrantTypes,
  unsupportedSettingsOf,
} from '../../../platform/config/client-rules';
import { tagSecret } from '../../../platform/security/client-secrets';
import { identifierProblem } from '../identifiers';
import { uuidV5 } from '../../../platform/security/name-based-uuid';
import type { Kysely } from 'kysely';
import type { SourceDatabase } from '../../source/source-schema';
import { readApiResourcesPage, readClientsPage, readScopeSources } from '../../source/configuration-reads';
import {
  insertClients,
  insertClientsWithin,
  insertScopes,
  type MigratedClientRow,
} from '../../store/migrated-configuration';
import { withoutCommitting } from '../../store/uncommitted';
import { countWrites, emptyPage, IN_LIST_LIMIT, type Pass, type PageResult } from '../types';

/** ApiScopes + IdentityResources, and the claims of ApiResources as migration-created scopes; seeded names win. */
export const scopesPass: Pass = async ({ source, target, options }) => {
  const { apiScopes, apiScopeClaims, identity, identityClaims, resources, resourceClaims } =
    await readScopeSources(source);
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
  if (unique.length === 0) return page;
  // A dry run writes as the real run would and rolls back: its counts are the real run's, and nothing is kept.
  const written = options.dryRun
    ? await withoutCommitting(target, (trx) => insertScopes(trx, unique))
    : await insertScopes(target, unique);
  countWrites(page, unique.length, written);
  return page;
};

interface ClientCursor {
  phase: 'clients' | 'resources';
  after: number;
}

type SecretRows = ReturnType<typeof secretsFor>;
interface MigratedClient {
  clientId: string;
  row: MigratedClientRow;
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

const asJson = <Row, V>(rows: Row[], value: (row: Row) => V) => JSON.stringify(rows.map(value));

/** A page of Clients with their child tables. */
async function clientsPage(source: Kysely<SourceDatabase>, page: PageResult, after: number, pageSize: number) {
  const { rows, children } = await readClientsPage(source, after, pageSize);
  if (!children) return { rows, clients: [] };
  const { secrets, scopes, redirects, logoutRedirects, grantTypes, origins, claims } = children;
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
    // The cutover report: each setting the service will not honour, named per client (GET /api/v1/clients/{id} too),
    // and the clients counted by whether they will notice.
    const unsupported = unsupportedSettingsOf(settings, []);
    for (const { setting, effect } of unsupported)
      page.warnings.push(`client ${ClientId}: ${setting} is not honoured: ${effect}`);
    const readiness = (page.readiness ??= { ready: 0, willNotice: 0 });
    if (unsupported.length > 0 || unoffered.length > 0 || publicProblem) readiness.willNotice++;
    else readiness.ready++;
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
  const { rows, children } = await readApiResourcesPage(source, after, pageSize);
  if (!children) return { rows, clients: [] };
  const { scopes, secrets } = children;
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
  if (clients.length === 0) return page;
  // A dry run writes as the real run would and rolls back: its counts are the real run's, and nothing is kept.
  const created = options.dryRun
    ? await withoutCommitting(target, (trx) => insertClientsWithin(trx, clients))
    : await insertClients(target, clients);
  countWrites(page, clients.length, created.size);
  return page;
};
