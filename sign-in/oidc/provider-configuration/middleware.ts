import type { KoaContextWithOIDC } from 'oidc-provider';
import type { Db } from '../../../platform/store/database';
import { DISCOVERY_PATH, OIDC_ROUTES } from '../../sign-in-paths';
import { isAccessTokenRevoked, revokeAccessToken } from '../../store/admin-tokens';
import type { ScopeClaims } from '../claims';
import { verifyIssuedAccessToken } from '../issued-tokens';
import { AUDIENCE_SEPARATOR } from '../resources';
import { scopesShownTo } from './features';

/**
 * Discovery as IdentityServer's listed it for the same configuration: `scopes_supported` holds the identity and API
 * scopes marked ShowInDiscoveryDocument (oidc-provider lists its identity scopes only, and every one of them).
 */
export function discoveryParity(scopes: ScopeClaims) {
  return async (ctx: KoaContextWithOIDC, next: () => Promise<void>) => {
    await next();
    if (ctx.path !== DISCOVERY_PATH || ctx.status !== 200 || !ctx.body || typeof ctx.body !== 'object') return;
    (ctx.body as Record<string, unknown>).scopes_supported = scopes.discoveryScopes;
  };
}

/**
 * Introspection names a token's audiences as an array, as Duende IdentityServer's does: oidc-provider holds one
 * audience per token, so a token for several API resources carries their names joined (resources.ts).
 */
export function introspectedAudiences() {
  return async (ctx: KoaContextWithOIDC, next: () => Promise<void>) => {
    await next();
    if (ctx.path !== OIDC_ROUTES.introspection || ctx.status !== 200 || !ctx.body || typeof ctx.body !== 'object')
      return;
    const body = ctx.body as Record<string, unknown>;
    if (typeof body.aud === 'string' && body.aud.includes(AUDIENCE_SEPARATOR))
      body.aud = body.aud.split(AUDIENCE_SEPARATOR);
  };
}

/**
 * A JWT access token is not stored when issued, and oidc-provider's revocation endpoint refuses one as
 * `unsupported_token_type` (RFC 7009 §2.2.1). IdentityServer revokes its JWTs' use at its own APIs, so here a JWT this
 * service issued to the authenticated client is listed as revoked until it expires (the admin API refuses it), and
 * the answer is the endpoint's 200. Another client's token keeps oidc-provider's refusal.
 */
export function revokeJwtAccessTokens(db: Db, issuer: string) {
  return async (ctx: KoaContextWithOIDC, next: () => Promise<void>) => {
    await next();
    if (ctx.path !== OIDC_ROUTES.revocation || ctx.method !== 'POST') return;
    if (ctx.status !== 400 || (ctx.body as { error?: string } | undefined)?.error !== 'unsupported_token_type') return;
    const token = ctx.oidc?.params?.token;
    const clientId = ctx.oidc?.client?.clientId;
    if (typeof token !== 'string' || !clientId) return;
    const claims = await verifyIssuedAccessToken(db, issuer, token);
    if (!claims || claims.client_id !== clientId) return;
    await revokeAccessToken(db, claims.jti, new Date(claims.exp * 1000));
    ctx.status = 200;
    ctx.body = '';
  };
}

/** A token's `scope`: Duende's JSON array, or one space-separated string (Oidc:EmitScopesAsSpaceDelimitedStringInJwt). */
const scopesOf = (scope: unknown): string[] =>
  Array.isArray(scope)
    ? scope.filter((s): s is string => typeof s === 'string')
    : typeof scope === 'string'
      ? scope.split(' ')
      : [];

/**
 * oidc-provider refuses to introspect a JWT (`unsupported_token_type`); Duende IdentityServer introspects its JWT
 * access tokens for the API resources they are for (IntrospectionResponseGenerator): `active: true`, the token's
 * claims, and `scope` as the space-separated scopes of the token that API serves; `active: false` when the token is
 * not one this service (or the source, under a migrated key) signed, expired, revoked, or carries none of the API's
 * scopes. The client a token was issued to may read it too, with all its scopes.
 */
export function introspectJwtAccessTokens(db: Db, issuer: string) {
  return async (ctx: KoaContextWithOIDC, next: () => Promise<void>) => {
    await next();
    if (ctx.path !== OIDC_ROUTES.introspection || ctx.method !== 'POST') return;
    if (ctx.status !== 400 || (ctx.body as { error?: string } | undefined)?.error !== 'unsupported_token_type') return;
    const token = ctx.oidc?.params?.token;
    const client = ctx.oidc?.client;
    if (typeof token !== 'string' || !client) return;
    ctx.status = 200;
    ctx.body = { active: false };
    const claims = await verifyIssuedAccessToken(db, issuer, token);
    if (!claims || (await isAccessTokenRevoked(db, claims.jti))) return;
    const scopes = scopesOf(claims.scope).filter(Boolean);
    const shown = claims.client_id === client.clientId ? scopes : scopesShownTo(client, scopes);
    if (shown.length === 0) return;
    const { scope: _scope, ...rest } = claims;
    ctx.body = { ...rest, active: true, scope: shown.join(' ') };
  };
}
