import { createHash, createPrivateKey, type JsonWebKey } from 'node:crypto';
import type { Db } from './database';

/** RFC 7638 thumbprint of an RSA key: the key id when none is given. */
function thumbprint(jwk: JsonWebKey): string {
  return createHash('sha256')
    .update(JSON.stringify({ e: jwk.e, kty: jwk.kty, n: jwk.n }))
    .digest('base64url');
}

/**
 * Imports the source's RSA signing key (PEM or JWK) into SigningKeys, so tokens issued before cutover stay valid.
 * Only the key id is ever printed; the key material stays in the store.
 */
export async function importSigningKey(
  db: Db,
  material: string,
  keyId?: string,
): Promise<{ kid: string; imported: boolean }> {
  const text = material.trim();
  const key = text.startsWith('{')
    ? createPrivateKey({ key: JSON.parse(text) as JsonWebKey, format: 'jwk' })
    : createPrivateKey(text);
  if (key.asymmetricKeyType !== 'rsa') throw new Error(`the key is ${key.asymmetricKeyType}, not RSA`);
  const jwk = key.export({ format: 'jwk' });
  const kid =
    keyId ?? (text.startsWith('{') ? ((JSON.parse(text) as { kid?: string }).kid ?? thumbprint(jwk)) : thumbprint(jwk));
  const written = await db
    .insertInto('signing_keys')
    .values({ id: kid, algorithm: 'RS256', jwk: JSON.stringify({ ...jwk, kid, alg: 'RS256', use: 'sig' }) })
    .onConflict((oc) => oc.column('id').doNothing())
    .returning('id')
    .execute();
  return { kid, imported: written.length > 0 };
}
