import type { KoaContextWithOIDC } from 'oidc-provider';
import { isReservedClaim } from '../../platform/security/reserved-claims';
import { AUDIENCE_SEPARATOR } from './resources';
import { carriedIdpOf } from './session-idp';
import { metadataOf } from './provider-clients';

/**
 * JWT access tokens in the shape Duende IdentityServer writes by default, so an API that validated the source's
 * tokens validates these unchanged (Duende's `JwtClaimTypes` and its token creation service, as documented for
 * IdentityServer 6/7):
 * - `aud`: every API resource whose scopes were granted, in one token;
 * - `scope`: a JSON array (Duende's default; `Oidc:EmitScopesAsSpaceDelimitedStringInJwt` gives the string form);
 * - `nbf` (the issue time), and for a user's token `auth_time`, `amr`, `idp` and `sid`, from the code or refresh token
 *   it was redeemed with; `idp` is the source's own for a carried-over source session (session-idp.ts), else `local`,
 *   or `external` for a sign-in through an organization's provider;
 * - the client's `ClientClaims`, named with `ClientClaimsPrefix` (`client_` by default): always in a client's own
 *   token (client credentials), in a user's token when the client has `AlwaysSendClientClaims`.
 * `typ: at+jwt`, `iss`, `client_id`, `sub`, `jti`, `iat` and `exp` are oidc-provider's own.
 */

interface ShapedToken {
  accountId?: string;
  sid?: string;
  client?: { metadata(): Record<string, unknown> };
}

interface Origin {
  authTime?: number;
  amr?: string[];
  sid?: string;
}

/** Claim names a client claim never takes, whatever its prefix: the token's own and the ones only the service sets. */
const TOKEN_CLAIMS = new Set(['iss', 'sub', 'aud', 'exp', 'nbf', 'iat', 'jti', 'client_id', 'scope', 'cnf']);

/** The code or refresh token a token endpoint request redeems: it carries how the user signed in. */
function originOf(ctx: KoaContextWithOIDC | undefined): Origin | undefined {
  const entities = ctx?.oidc?.entities as Record<string, Origin | undefined> | undefined;
  return entities?.AuthorizationCode ?? entities?.RefreshToken ?? entities?.DeviceCode;
}

const idpOf = (ctx: KoaContextWithOIDC | undefined, amr: string[]) =>
  carriedIdpOf(ctx) ?? (amr.includes('external') ? 'external' : 'local');

/** `idp` for an ID token, from how the user signed in. */
export function idpClaimOf(ctx: KoaContextWithOIDC | undefined): { idp?: string } {
  const amr = originOf(ctx)?.amr;
  return amr?.length ? { idp: idpOf(ctx, amr) } : {};
}

export function accessTokenShape(options: { scopesAsString: boolean }) {
  return (
    ctx: KoaContextWithOIDC,
    token: ShapedToken,
    jwt: { header?: Record<string, unknown>; payload: Record<string, unknown> },
  ): Promise<void> => {
    const { payload } = jwt;
    // A token for several API resources carries their names as one audience (oidc-provider takes one): each its own.
    if (typeof payload.aud === 'string' && payload.aud.includes(AUDIENCE_SEPARATOR))
      payload.aud = payload.aud.split(AUDIENCE_SEPARATOR);
    if (typeof payload.scope === 'string' && !options.scopesAsString) payload.scope = payload.scope.split(' ');
    payload.nbf ??= payload.iat;

    const origin = originOf(ctx);
    if (token.accountId && origin) {
      if (origin.authTime) payload.auth_time = origin.authTime;
      if (origin.amr?.length) {
        payload.amr = origin.amr;
        payload.idp = idpOf(ctx, origin.amr);
      }
      const sid = token.sid ?? origin.sid;
      if (sid) payload.sid = sid;
    }

    const metadata = token.client ? metadataOf(token.client) : {};
    const settings = (metadata['urn:identity-service:settings'] ?? {}) as {
      AlwaysSendClientClaims?: boolean;
      ClientClaimsPrefix?: string | null;
    };
    const claims = (metadata['urn:identity-service:client-claims'] ?? []) as Array<{ type: string; value: string }>;
    if (claims.length === 0 || (token.accountId && !settings.AlwaysSendClientClaims)) return Promise.resolve();
    const prefix = settings.ClientClaimsPrefix ?? 'client_';
    for (const { type, value } of claims) {
      const name = `${prefix}${type}`;
      // A prefix set empty must not let a client claim pass for one the service sets (`sub`, `role`, `amr`, …).
      if (TOKEN_CLAIMS.has(name) || isReservedClaim(name)) continue;
      const held: unknown = payload[name];
      payload[name] = held === undefined ? value : [...(Array.isArray(held) ? (held as unknown[]) : [held]), value];
    }
    return Promise.resolve();
  };
}
