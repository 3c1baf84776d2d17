import { errors, type KoaContextWithOIDC, type ResourceServer } from 'oidc-provider';
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

async function readApiResources(db: Db): Promise<Map<string, string[]>> {
  const rows = await listApiResourceClients(db);
  return new Map([[ADMIN_RESOURCE, [ADMIN_RESOURCE]], ...rows.map((r) => [r.client_id, r.allowed_scopes] as const)]);
}

/** The API resources of the store (ApiResources migrated as clients marked apiResource), with the admin API's own. */
export function storedApiResources(db: Db): ApiResources {
  return () => readApiResources(db);
}

/**
 * The API resources as the store has them now, read once for a provider build: a token request looks at them up to
 * three times (its scopes, its default resource, the resource server's details). A change (an API resource added,
 * disabled, or serving other scopes) reaches every instance with the scopes, within Oidc:ReloadSeconds
 * (providerSettingsVersion covers both, sign-in-router.ts rebuilds on it).
 */
export async function apiResourcesOfBuild(db: Db): Promise<ApiResources> {
  const resources = await readApiResources(db);
  return () => Promise.resolve(resources);
}

/**
 * The API resources an access token is for when the request names none: every one that serves a requested scope, as
 * Duende IdentityServer puts them all in one token's `aud`. oidc-provider knows one resource per token, so several
 * travel as one indicator naming them all (`urn:identity-service:api:orders-api+billing-api`); the `resource`
 * parameter still asks for one. The audience is narrowed to the APIs the client was granted in resourceServer.
 */
export async function resourceOfScopes(resources: ApiResources, scopes: string[]): Promise<string | undefined> {
  const names = [...(await resources())].filter(([, served]) => served.some((s) => scopes.includes(s))).map(([n]) => n);
  return names.length === 0 ? undefined : names.join(AUDIENCE_SEPARATOR);
}

/** Joins the API resource names of one indicator and one audience: API resource names in IdentityServer never hold it. */
export const AUDIENCE_SEPARATOR = '+';

/** What a request's resource indicator is checked against. */
export interface ResourceRequest {
  /** The client's AllowedScopes. */
  allowedScopes: string[];
  /** The scopes of this request (asked for, or those of the code or refresh token redeemed); all when unknown. */
  requestedScopes?: string[];
  /** The indicator was sent in the request itself, not defaulted from its scopes nor carried by a code or token. */
  fromRequest?: boolean;
  /** IdentityServer's AccessTokenType 1 (Reference): an opaque handle the APIs introspect, instead of a JWT. */
  reference?: boolean;
}

/**
 * The resource an indicator names, offering the scopes of it that the client is allowed and asked for. The audience
 * names only the API resources at least one of whose scopes is so granted, as Duende IdentityServer's `aud` names
 * the API resources of the granted scopes; a combined indicator is the service's own (from the scopes), never one a
 * request names, so a request cannot add an API to a token's audience.
 */
export async function resourceServer(
  resources: ApiResources,
  indicator: string,
  request: ResourceRequest,
): Promise<ResourceServer> {
  const names = indicator.startsWith(RESOURCE_PREFIX)
    ? indicator.slice(RESOURCE_PREFIX.length).split(AUDIENCE_SEPARATOR)
    : [];
  const known = await resources();
  if (names.length === 0 || names.some((name) => !known.has(name)))
    throw new errors.InvalidTarget(`unknown resource ${indicator}`);
  if (request.fromRequest && names.length > 1)
    throw new errors.InvalidTarget(
      `resource names one API resource (${RESOURCE_PREFIX}{name}); for several, leave resource out and ask for their scopes`,
    );
  const offered = request.allowedScopes.filter((s) => !request.requestedScopes || request.requestedScopes.includes(s));
  const audience = names.filter((name) => known.get(name)!.some((s) => offered.includes(s)));
  const granted = [...new Set(audience.flatMap((name) => known.get(name)!))].filter((s) => offered.includes(s));
  if (granted.length === 0) throw new errors.InvalidTarget(`the client may not ask for resource ${indicator}`);
  return {
    scope: granted.join(' '),
    // oidc-provider takes one audience; the token customizer (token-shape.ts) writes each of them into `aud`, and
    // introspection answers them as an array (provider-configuration/middleware.ts).
    audience: audience.join(AUDIENCE_SEPARATOR),
    ...(request.reference
      ? { accessTokenFormat: 'opaque' }
      : { accessTokenFormat: 'jwt', jwt: { sign: { alg: 'RS256' } } }),
  };
}

/** The values of `resource` the request itself carries (query or form body), before any default fills it. */
export function indicatorsInRequest(ctx: KoaContextWithOIDC): string[] {
  const body = ctx.oidc?.body;
  return [ctx.query?.resource, body?.resource].flat().filter((v): v is string => typeof v === 'string');
}

/** The scopes of this request: asked for, else those of the code or refresh token it redeems; undefined when none. */
export function scopesOfRequest(ctx: KoaContextWithOIDC): string[] | undefined {
  const asked = ctx.oidc?.params?.scope;
  if (typeof asked === 'string') return asked.split(' ').filter(Boolean);
  const entities = ctx.oidc?.entities as Record<string, { scope?: string } | undefined> | undefined;
  const redeemed = entities?.AuthorizationCode ?? entities?.DeviceCode ?? entities?.RefreshToken;
  return typeof redeemed?.scope === 'string' ? redeemed.scope.split(' ').filter(Boolean) : undefined;
}
