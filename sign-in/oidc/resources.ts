import { errors, type ResourceServer } from 'oidc-provider';
import { listApiResourceClients } from '../../platform/store/clients';
import type { Db } from '../../platform/store/database';

/**
 * IdentityServer names API resources ("orders-api"); oidc-provider wants resource indicators that are absolute URIs.
 * An API resource's indicator is this prefix and its name; the access token's `aud` is the bare name, as before.
 */
export const RESOURCE_PREFIX = 'urn:identity-service:api:';

/** The service's own admin API: an access token for it carries the `IdentityAdmin` scope. */
export const ADMIN_RESOURCE = 'IdentityAdmin';

/** API resource name → the scopes it serves. */
export type ApiResources = () => Promise<Map<string, string[]>>;

/** The API resources of the store (ApiResources migrated as clients marked apiResource), with the admin API's own. */
export function storedApiResources(db: Db): ApiResources {
  return async () => {
    const rows = await listApiResourceClients(db);
    return new Map([[ADMIN_RESOURCE, [ADMIN_RESOURCE]], ...rows.map((r) => [r.client_id, r.allowed_scopes] as const)]);
  };
}

/**
 * The one API resource an access token is for: the first (by name) that serves a requested scope. oidc-provider issues
 * one resource per access token, where IdentityServer put every requested resource in `aud`; a client that needs
 * tokens for two APIs asks for each with the `resource` parameter.
 */
export async function resourceOfScopes(resources: ApiResources, scopes: string[]): Promise<string | undefined> {
  for (const [name, served] of await resources()) if (served.some((s) => scopes.includes(s))) return name;
  return undefined;
}

/** The resource an indicator names, offering the scopes of it that the client is allowed. */
export async function resourceServer(
  resources: ApiResources,
  indicator: string,
  allowedScopes: string[],
): Promise<ResourceServer> {
  const name = indicator.startsWith(RESOURCE_PREFIX) ? indicator.slice(RESOURCE_PREFIX.length) : undefined;
  const served = name === undefined ? undefined : (await resources()).get(name);
  if (!name || !served) throw new errors.InvalidTarget(`unknown resource ${indicator}`);
  const granted = served.filter((s) => allowedScopes.includes(s));
  if (granted.length === 0) throw new errors.InvalidTarget(`the client may not ask for resource ${indicator}`);
  return {
    scope: granted.join(' '),
    audience: name,
    accessTokenFormat: 'jwt',
    jwt: { sign: { alg: 'RS256' } },
  };
}
