import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * IdentityServer's shared-secret hashes: base64 of the SHA-256 or SHA-512 digest of the UTF-8 secret (`Sha256()` /
 * `Sha512()` in its configuration), stored by the service tagged `SHA256$…` / `SHA512$…`.
 */
export function hashClientSecret(secret: string, algorithm: 'SHA256' | 'SHA512' = 'SHA256'): string {
  const digest = createHash(algorithm === 'SHA256' ? 'sha256' : 'sha512')
    .update(secret, 'utf8')
    .digest('base64');
  return `${algorithm}$${digest}`;
}

/** Whether `secret` is the one a stored tagged hash was made from; constant time in the digest. */
export function clientSecretMatches(secret: string, stored: string): boolean {
  const [algorithm, expected] = stored.split('$', 2);
  if ((algorithm !== 'SHA256' && algorithm !== 'SHA512') || !expected) return false;
  const actual = Buffer.from(hashClientSecret(secret, algorithm).slice(algorithm.length + 1), 'base64');
  const wanted = Buffer.from(expected, 'base64');
  return actual.length === wanted.length && timingSafeEqual(actual, wanted);
}

/** Duende stores shared secrets as base64 digests; the digest length says which one. */
export function tagSecret(value: string): string | undefined {
  const bytes = Buffer.from(value, 'base64');
  if (bytes.toString('base64') !== value.replace(/\s/g, '')) return undefined;
  if (bytes.length === 32) return `SHA256$${value}`;
  if (bytes.length === 64) return `SHA512$${value}`;
  return undefined;
}
