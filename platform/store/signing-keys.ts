import { createHash, generateKeyPairSync, type JsonWebKey } from 'node:crypto';
import { protectText, unprotectText, type KeyRing } from '../security/data-protection';
import { staticSigningKey } from '../security/signing-key-material';
import type { Db } from './database';

/** RFC 7638 thumbprint of an RSA key: the key id when none is given. */
function thumbprint(jwk: JsonWebKey): string {
  return createHash('sha256')
    .update(JSON.stringify({ e: jwk.e, kty: jwk.kty, n: jwk.n }))
    .digest('base64url');
}

/** A private RSA or EC JWK as the provider signs with it: its `kid`, its algorithm (RS256, ES256, …), for signatures. */
export type SigningJwk = JsonWebKey & { kid: string; alg: string; use: 'sig' };

const publicHalf = ({ kty, n, e, crv, x, y, kid, alg, use }: SigningJwk) =>
  kty === 'EC' ? { kty, crv, x, y, kid, alg, use } : { kty, n, e, kid, alg, use };

/** Where a stored key came from: rotation made it, a migration carried it over, or an operator imported it. */
export type SigningKeyOrigin = 'generated' | 'migrated' | 'static';

/**
 * Stores a private signing key sealed under the data-protection ring (the public half in the clear for the JWKS).
 * `createdAt` is the key's own creation time (a migrated key keeps the source's; rotation reads it). A key id already
 * stored is left as it is: false.
 */
export async function storeSigningKey(
  db: Db,
  ring: KeyRing,
  jwk: SigningJwk,
  { origin, createdAt }: { origin: SigningKeyOrigin; createdAt?: Date },
): Promise<boolean> {
  const written = await db
    .insertInto('signing_keys')
    .values({
      id: jwk.kid,
      algorithm: jwk.alg,
      jwk: JSON.stringify(publicHalf(jwk)),
      sealed_private: protectText(JSON.stringify(jwk), ring),
      origin,
      ...(createdAt ? { created_at: createdAt } : {}),
    })
    .onConflict((oc) => oc.column('id').doNothing())
    .returning('id')
    .execute();
  return written.length > 0;
}

const storeKey = (db: Db, ring: KeyRing, jwk: SigningJwk) => storeSigningKey(db, ring, jwk, { origin: 'static' });

/**
 * Imports a static signing key of the source (IdentityServer's AddSigningCredential) into SigningKeys, so tokens it
 * signed stay valid: a PFX (with `password`, or none), a PEM or a JWK private key, RSA or EC. The kid is `keyId`,
 * else the JWK's own, the certificate's as IdentityServer names it, or the RFC 7638 thumbprint. The private key is
 * sealed under the data-protection ring; only the key id is ever printed.
 */
export async function importSigningKey(
  db: Db,
  ring: KeyRing,
  material: string | Buffer,
  keyId?: string,
  password?: string,
): Promise<{ kid: string; alg: string; imported: boolean }> {
  const jwk = staticSigningKey(Buffer.from(material), { kid: keyId, password });
  return { kid: jwk.kid, alg: jwk.alg, imported: await storeKey(db, ring, jwk) };
}

/** Seals the private keys of rows stored before keys were sealed; returns how many it sealed. */
export async function sealStoredSigningKeys(db: Db, ring: KeyRing): Promise<number> {
  const plain = await db.selectFrom('signing_keys').select(['id', 'jwk']).where('sealed_private', 'is', null).execute();
  for (const row of plain) {
    const jwk = row.jwk as unknown as SigningJwk;
    await db
      .updateTable('signing_keys')
      .set({ jwk: JSON.stringify(publicHalf(jwk)), sealed_private: protectText(JSON.stringify(jwk), ring) })
      .where('id', '=', row.id)
      .execute();
  }
  return plain.length;
}

/**
 * Every stored signing key, the active one first: the most recently imported or generated. With none stored, one RSA
 * key is generated and stored (two processes starting together may each generate one; both are kept and served).
 */
export async function loadSigningKeys(db: Db, ring: KeyRing): Promise<SigningJwk[]> {
  const read = () =>
    db
      .selectFrom('signing_keys')
      .select(['sealed_private'])
      .where('sealed_private', 'is not', null)
      .orderBy('created_at', 'desc')
      .orderBy('id')
      .execute();
  let rows = await read();
  if (rows.length === 0) {
    const jwk = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
    await storeSigningKey(
      db,
      ring,
      { ...jwk, kid: thumbprint(jwk), alg: 'RS256', use: 'sig' },
      { origin: 'generated' },
    );
    rows = await read();
  }
  return rows.map((row) => JSON.parse(unprotectText(row.sealed_private!, ring)) as SigningJwk);
}

/** Which of these key ids the store holds already (a migration's dry run says so without writing). */
export async function storedSigningKeyIds(db: Db, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db.selectFrom('signing_keys').select('id').where('id', 'in', ids).execute();
  return new Set(rows.map((r) => r.id));
}

/** How many signing keys the store holds of each origin (a key imported from the source is `static` or `migrated`). */
export async function countSigningKeysByOrigin(db: Db): Promise<Record<string, number>> {
  const rows = await db
    .selectFrom('signing_keys')
    .select(['origin', (eb) => eb.fn.countAll<string>().as('keys')])
    .groupBy('origin')
    .execute();
  return Object.fromEntries(rows.map((r) => [r.origin, Number(r.keys)]));
}
