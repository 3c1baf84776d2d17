import { createPublicKey, verify, type JsonWebKey } from 'node:crypto';
import { findSigningPublicKey } from '../store/admin-tokens';
import type { Db } from '../../platform/store/database';

export interface IssuedAccessTokenClaims {
  iss?: unknown;
  aud?: unknown;
  exp: number;
  iat: number;
  nbf?: unknown;
  sub?: unknown;
  client_id: string;
  scope?: unknown;
  jti: string;
}

function decodeJson(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The claims of a JWT access token this service issued and that is still within its lifetime: `typ: at+jwt`, RS256
 * under one of its own signing keys, its issuer; undefined for anything else (an ID token, a forged or expired one).
 */
export async function verifyIssuedAccessToken(
  db: Db,
  issuer: string,
  token: string,
): Promise<IssuedAccessTokenClaims | undefined> {
  const parts = token.split('.');
  if (parts.length !== 3) return undefined;
  const header = decodeJson(parts[0]);
  const claims = decodeJson(parts[1]);
  if (header?.alg !== 'RS256' || header.typ !== 'at+jwt' || typeof header.kid !== 'string' || !claims) return undefined;
  // A key id the store could not hold (NUL, absurd length) names no key of ours.
  if (header.kid.length > 200 || header.kid.includes('\0')) return undefined;
  const jwk = await findSigningPublicKey(db, header.kid);
  if (!jwk) return undefined;
  const publicKey = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
  if (!verify('sha256', Buffer.from(`${parts[0]}.${parts[1]}`), publicKey, Buffer.from(parts[2], 'base64url')))
    return undefined;
  const now = Date.now() / 1000;
  if (claims.iss !== issuer || typeof claims.exp !== 'number' || claims.exp <= now) return undefined;
  if (typeof claims.nbf === 'number' && claims.nbf > now + 60) return undefined;
  if (typeof claims.jti !== 'string' || typeof claims.client_id !== 'string' || typeof claims.iat !== 'number')
    return undefined;
  return claims as unknown as IssuedAccessTokenClaims;
}
