import { compactVerify, importJWK } from 'jose';
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

/** The algorithms the service's keys sign with: RSA (its own and migrated keys) and EC (migrated keys). */
const KEY_ALGORITHMS = new Set(['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512']);

/** Whether the JWS verifies under the stored key `kid`, with the algorithm that key is stored for. */
async function signedByStoredKey(db: Db, token: string, alg: string, kid: string): Promise<boolean> {
  // A key id the store could not hold (NUL, absurd length) names no key of ours.
  if (kid.length > 200 || kid.includes('\0')) return false;
  const key = await findSigningPublicKey(db, kid);
  if (!key || key.algorithm !== alg) return false;
  try {
    await compactVerify(token, await importJWK(key.jwk, alg), { algorithms: [alg] });
    return true;
  } catch {
    return false;
  }
}

/**
 * The claims of a JWT access token this service issued and that is still within its lifetime: `typ: at+jwt`, signed
 * under one of its stored signing keys (its own or a migrated one, RSA or EC, with that key's algorithm), its issuer;
 * undefined for anything else (an ID token, a forged or expired one).
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
  if (typeof header?.alg !== 'string' || !KEY_ALGORITHMS.has(header.alg) || header.typ !== 'at+jwt') return undefined;
  if (typeof header.kid !== 'string' || !claims) return undefined;
  if (!(await signedByStoredKey(db, token, header.alg, header.kid))) return undefined;
  const now = Date.now() / 1000;
  if (claims.iss !== issuer || typeof claims.exp !== 'number' || claims.exp <= now) return undefined;
  if (typeof claims.nbf === 'number' && claims.nbf > now + 60) return undefined;
  if (typeof claims.jti !== 'string' || typeof claims.client_id !== 'string' || typeof claims.iat !== 'number')
    return undefined;
  return claims as unknown as IssuedAccessTokenClaims;
}
