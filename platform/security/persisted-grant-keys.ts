import { createHash } from 'node:crypto';

/**
 * The `PersistedGrants.Key` IdentityServer stores for a handle: SHA-256 of `handle:type`, never the handle itself.
 * Duende IdentityServer 6 and later make handles of 64 hex digits with a `-1` suffix and store the hash as upper-case
 * hex; earlier handles (and IdentityServer4's) are stored as the hash in base64 (DefaultGrantStore.GetHashedKey).
 * Both forms are answered, so a lookup finds a token whichever version issued it.
 */
export function persistedGrantKeys(handle: string, type = 'refresh_token'): string[] {
  const digest = createHash('sha256').update(`${handle}:${type}`, 'utf8').digest();
  const hex = digest.toString('hex').toUpperCase();
  const base64 = digest.toString('base64');
  return handle.endsWith('-1') ? [hex, base64] : [base64, hex];
}
