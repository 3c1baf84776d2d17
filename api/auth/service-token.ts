import { createPublicKey, verify, type JsonWebKey } from 'node:crypto';
import type { Db } from '../../store/database';
import { ADMIN_RESOURCE } from '../../oidc/resources';

interface AccessTokenClaims {
  iss?: unknown;
  aud?: unknown;
  exp?: unknown;
  nbf?: unknown;
  sub?: unknown;
  client_id?: unknown;
  scope?: unknown;
  role?: unknown;
}

const listOf = (value: unknown): unknown[] => (Array.isArray(value) ? value : value === undefined ? [] : [value]);

function decodeJson(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, 'base64url').toString('utf8'));
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether a bearer token is an access token this service issued for its admin API: RS256 under one of its own signing
 * keys, its issuer, the IdentityAdmin audience, not expired. A client's own token (client credentials) needs the
 * IdentityAdmin scope; a user's token needs the IdentityAdmin role as well, so a client allowed the scope does not
 * make every user who signs in through it an administrator.
 */
export function serviceTokenCheck(db: Db, issuer: string) {
  return async (token: string): Promise<boolean> => {
    const parts = token.split('.');
    if (parts.length !== 3) return false;
    const header = decodeJson(parts[0]);
    const claims = decodeJson(parts[1]) as AccessTokenClaims | undefined;
    if (header?.alg !== 'RS256' || typeof header.kid !== 'string' || !claims) return false;
    const key = await db.selectFrom('signing_keys').select('jwk').where('id', '=', header.kid).executeTakeFirst();
    if (!key) return false;
    const { kty, n, e } = key.jwk as { kty?: string; n?: string; e?: string };
    const publicKey = createPublicKey({ key: { kty, n, e } as JsonWebKey, format: 'jwk' });
    const signed = Buffer.from(`${parts[0]}.${parts[1]}`);
    if (!verify('sha256', signed, publicKey, Buffer.from(parts[2], 'base64url'))) return false;
    const now = Date.now() / 1000;
    if (claims.iss !== issuer || typeof claims.exp !== 'number' || claims.exp <= now) return false;
    if (typeof claims.nbf === 'number' && claims.nbf > now + 60) return false;
    if (!listOf(claims.aud).includes(ADMIN_RESOURCE)) return false;
    if (!(typeof claims.scope === 'string' && claims.scope.split(' ').includes(ADMIN_RESOURCE))) return false;
    const forUser = claims.sub !== undefined && claims.sub !== claims.client_id;
    return !forUser || listOf(claims.role).includes(ADMIN_RESOURCE);
  };
}

export type ServiceTokenCheck = ReturnType<typeof serviceTokenCheck>;
