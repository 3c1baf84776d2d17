import { importJWK, SignJWT } from 'jose';
import type { SigningJwk } from '../../platform/store/signing-keys';

/** The event a logout token announces (OpenID Connect Back-Channel Logout 1.0, §2.4). */
export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

/**
 * How long a logout token is good for: Duende IdentityServer's DefaultBackChannelLogoutService issues them for five
 * minutes (DefaultLogoutTokenLifetime). A delivery retried later gets a new token with the same `jti`.
 */
export const LOGOUT_TOKEN_LIFETIME_SECONDS = 5 * 60;

export interface LogoutTokenClaims {
  issuer: string;
  clientId: string;
  userId: string;
  /** The session id of the client's ID tokens; absent when the client does not ask for it. */
  sid?: string;
  jti: string;
}

/**
 * A logout token as Duende IdentityServer writes one (DefaultBackChannelLogoutService.CreateClaimsForTokenAsync):
 * `iss`, `aud` (the client), `iat`, `exp`, `jti`, `sub`, `events` and, when the client requires it, `sid`; no `nonce`.
 * Typed `logout+jwt` as Back-Channel Logout 1.0 §2.4 recommends, and signed RS256 with the key the provider's ID
 * tokens are signed with, so the client checks it against the same JWKS.
 */
export async function signLogoutToken(key: SigningJwk, claims: LogoutTokenClaims, now = new Date()): Promise<string> {
  const iat = Math.floor(now.getTime() / 1000);
  return new SignJWT({
    events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
    ...(claims.sid === undefined ? {} : { sid: claims.sid }),
  })
    .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'logout+jwt' })
    .setIssuer(claims.issuer)
    .setAudience(claims.clientId)
    .setSubject(claims.userId)
    .setJti(claims.jti)
    .setIssuedAt(iat)
    .setExpirationTime(iat + LOGOUT_TOKEN_LIFETIME_SECONDS)
    .sign(await importJWK(key, 'RS256'));
}
