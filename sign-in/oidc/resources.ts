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
 * The API resources an access token is for when the request names none: every one that serves a requested scope, as
 * Duende IdentityServer puts them all in one token's `aud`. oidc-provider knows one resource per token, so several
 * travel as one indicator naming them all (`urn:identity-service:api:orders-api+billing-api`); the `resource`
 * parameter still asks for one.
 */
export async function resourceOfScopes(resources: ApiResources, scopes: string[]): Promise<string | undefined> {
  const names = [...(await resources())].filter(([, served]) => served.some((s) => scopes.includes(s))).map(([n]) => n);
  return names.length === 0 ? undefined : names.join(AUDIENCE_SEPARATOR);
}

/** Joins the API resource names of one indicator and one audience: API resource names in IdentityServer never hold it. */
export const AUDIENCE_SEPARATOR = '+';

/** The resource an indicator names, offering the scopes of it that the client is allowed. */
export async function resourceServer(
  resources: ApiResources,
  indicator: string,
  allowedScopes: string[],
  /** IdentityServer's AccessTokenType 1 (Reference): an opaque handle the APIs introspect, instead of a JWT. */
  reference = false,
): Promise<ResourceServer> {
  const names = indicator.startsWith(RESOURCE_PREFIX)
    ? indicator.slice(RESOURCE_PREFIX.length).split(AUDIENCE_SEPARATOR)
    : [];
  const known = await resources();
  if (names.length === 0 || names.some((name) => !known.has(name)))
    throw new errors.InvalidTarget(`unknown resource ${indicator}`);
  const granted = [...new Set(names.flatMap((name) => known.get(name)!))].filter((s) => allowedScopes.includes(s));
  if (granted.length === 0) throw new errors.InvalidTarget(`the client may not ask for resource ${indicator}`);
  return {
    scope: granted.join(' '),
    // oidc-provider takes one audience; the token customizer (token-shape.ts) writes each of them into `aud`.
    audience: names.join(AUDIENCE_SEPARATOR),
    ...(reference ? { accessTokenFormat: 'opaque' } : { accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } }),
  };
}
