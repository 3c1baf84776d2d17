import type { Configuration } from 'oidc-provider';
import { MAX_LIFETIME_SECONDS } from '../../../platform/security/field-bounds';
import { metadataOf, type ClientSettings } from '../provider-clients';

export const settingsOfClient = (client: { metadata(): Record<string, unknown> } | undefined): ClientSettings =>
  ((client && metadataOf(client))?.['urn:identity-service:settings'] as ClientSettings | undefined) ?? {};

/**
 * A client's lifetime setting, at most MAX_LIFETIME_SECONDS: the admin API and the configuration refuse longer ones,
 * and a client stored before (or migrated with one) still gets tokens instead of a date no store can hold.
 */
const lifetime = (seconds: number | undefined, fallback: number) =>
  Math.min(typeof seconds === 'number' && seconds > 0 ? seconds : fallback, MAX_LIFETIME_SECONDS);

/** IdentityServer's default AbsoluteRefreshTokenLifetime: 30 days. */
const DEFAULT_ABSOLUTE_LIFETIME = 2592000;

/**
 * IdentityServer's RefreshTokenExpiration, measured from the first issue (`iiat`, which oidc-provider carries through
 * every rotation; an adopted token's is its creation at the source): Absolute (1, its default) ends a token
 * AbsoluteRefreshTokenLifetime after it; Sliding (0) extends it by SlidingRefreshTokenLifetime at each use, never past
 * that end, and without an end when AbsoluteRefreshTokenLifetime is 0 (Duende's DefaultRefreshTokenService).
 */
export function refreshTokenLifetime(settings: ClientSettings, token: { iat?: number; iiat?: number }): number {
  const now = Math.floor(Date.now() / 1000);
  const age = now - (token.iiat ?? token.iat ?? now);
  if (settings.RefreshTokenExpiration !== 0)
    return Math.max(1, (settings.AbsoluteRefreshTokenLifetime || DEFAULT_ABSOLUTE_LIFETIME) - age);
  const absolute = settings.AbsoluteRefreshTokenLifetime ?? DEFAULT_ABSOLUTE_LIFETIME;
  const sliding = settings.SlidingRefreshTokenLifetime || absolute || DEFAULT_ABSOLUTE_LIFETIME;
  return Math.max(1, absolute === 0 ? sliding : Math.min(sliding, absolute - age));
}

/** Each artefact's lifetime: the client's IdentityServer settings where it has them, else IdentityServer's defaults. */
export const TTL: Configuration['ttl'] = {
  AccessToken: (_ctx, token, client) =>
    token.resourceServer?.accessTokenTTL ?? lifetime(settingsOfClient(client).AccessTokenLifetime, 3600),
  ClientCredentials: (_ctx, token, client) =>
    token.resourceServer?.accessTokenTTL ?? lifetime(settingsOfClient(client).AccessTokenLifetime, 3600),
  AuthorizationCode: (ctx) => lifetime(settingsOfClient(ctx.oidc.client).AuthorizationCodeLifetime, 300),
  IdToken: (ctx) => lifetime(settingsOfClient(ctx.oidc.client).IdentityTokenLifetime, 300),
  RefreshToken: (_ctx, token, client) =>
    Math.min(refreshTokenLifetime(settingsOfClient(client), token), MAX_LIFETIME_SECONDS),
  Interaction: 3600,
  Session: 14 * 24 * 3600,
  Grant: 365 * 24 * 3600,
};
