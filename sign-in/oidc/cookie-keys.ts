import { randomBytes } from 'node:crypto';
import type { Db } from '../../platform/store/database';
import { storedDevelopmentCookieKeys } from '../../platform/store/oidc-payloads';

/**
 * The keys that sign the provider's cookies: `Oidc:CookieKeys`, or else a development key generated once and kept in
 * the store (every API process on that database shares it), with a start-up warning.
 */
export async function cookieKeys(db: Db, configured: string[] | undefined, log: (line: string) => void) {
  if (configured && configured.length > 0) return configured;
  const keys = await storedDevelopmentCookieKeys(db, [randomBytes(32).toString('base64url')]);
  log(
    'sign-in: Oidc:CookieKeys is not set, so the session cookies are signed with a development key kept in the store; set Oidc__CookieKeys__0 to a long random value in production',
  );
  return keys;
}
