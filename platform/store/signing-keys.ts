import { createHash, generateKeyPairSync, type JsonWebKey } from 'node:crypto';
import { sql } from 'kysely';
import { keyManagementSchema } from '../config/config-schema';
import { protectText, unprotectText, type KeyRing } from '../security/data-protection';
import { certificateThumbprint, staticSigningKey } from '../security/signing-key-material';
import {
  isNewKeyDue,
  isRetired,
  ROTATED_ALGORITHM,
  signingKeysAt,
  type KeyManagementTimes,
  type TimedKey,
} from '../security/signing-key-timeline';
import type { Db } from './database';

/** RFC 7638 thumbprint of an RSA key: the key id when none is given. */
function thumbprint(jwk: JsonWebKey): string {
  return createHash('sha256')
    .update(JSON.stringify({ e: jwk.e, kty: jwk.kty, n: jwk.n }))
    .digest('base64url');
}

/** A private RSA or EC JWK as the provider signs with it: its `kid`, its algorithm (RS256, ES256, …), for signatures. */
export type SigningJwk = JsonWebKey & { kid: string; alg: string; use: 'sig'; x5c?: string[] };

/** The public half of a key, with its certificate and the certificate's thumbprint when it came with one. */
const publicHalf = ({ kty, n, e, crv, x, y, kid, alg, use, x5c }: SigningJwk) => ({
  ...(kty === 'EC' ? { kty, crv, x, y, kid, alg, use } : { kty, n, e, kid, alg, use }),
  ...(x5c?.length ? { x5t: certificateThumbprint(x5c[0]), x5c } : {}),
});

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

/** KeyManagement as configured: whether rotation runs, and the times of the key timeline. */
export type KeyManagementSettings = KeyManagementTimes & { Enabled: boolean };

/** IdentityServer's defaults, for a caller that has no configuration of its own at hand. */
const DEFAULT_KEY_MANAGEMENT: KeyManagementSettings = keyManagementSchema.parse(undefined);

/** A stored key with the times the timeline reads, and its private JWK once unsealed. */
export type StoredSigningKey = TimedKey & { jwk: SigningJwk };

const timedColumns = ['id', 'algorithm', 'created_at', 'stored_at', 'origin'] as const;

const timed = (row: {
  id: string;
  algorithm: string;
  created_at: Date;
  stored_at: Date;
  origin: TimedKey['origin'];
}) => ({
  id: row.id,
  algorithm: row.algorithm,
  createdAt: row.created_at,
  storedAt: row.stored_at,
  origin: row.origin,
});

/**
 * Rotation and the first start take turns on one transaction-scoped advisory lock, so two processes never both find
 * the store without a due key and both make one.
 */
const lockSigningKeys = (trx: Db) =>
  sql`select pg_advisory_xact_lock(hashtextextended('signing-keys', 0))`.execute(trx);

function newRsaKey(): SigningJwk {
  const jwk = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  return { ...jwk, kid: thumbprint(jwk), alg: ROTATED_ALGORITHM, use: 'sig' };
}

/** Every stored key with its times, unsealed (rows not yet sealed are left to sealStoredSigningKeys). */
export async function readSigningKeys(db: Db, ring: KeyRing): Promise<StoredSigningKey[]> {
  const rows = await db
    .selectFrom('signing_keys')
    .select([...timedColumns, 'sealed_private'])
    .where('sealed_private', 'is not', null)
    .execute();
  return rows.map((row) => ({
    ...timed(row),
    jwk: JSON.parse(unprotectText(row.sealed_private!, ring)) as SigningJwk,
  }));
}

/**
 * A digest of the key set (ids, times, origins): one cheap query an instance runs every KeyCacheDuration to learn
 * whether the store's keys changed since it built its provider.
 */
export async function signingKeysVersion(db: Db): Promise<string> {
  const { rows } = await sql<{ version: string }>`
    select md5(coalesce(string_agg(id || ':' || origin || ':' || created_at::text || ':' || stored_at::text, ','
      order by id), '')) as version
    from signing_keys`.execute(db);
  return rows[0].version;
}

/**
 * With no RS256 key stored (an empty store, or one a migration filled with a source's EC keys only), one RSA key is
 * made, under the lock: two processes starting together make one between them. Tokens are RS256 unless a client asks
 * otherwise, so one must always be there to sign them.
 */
async function ensureSigningKey(db: Db, ring: KeyRing): Promise<void> {
  const rsaKey = (q: Db) =>
    q.selectFrom('signing_keys').select('id').where('algorithm', '=', ROTATED_ALGORITHM).limit(1).executeTakeFirst();
  if (await rsaKey(db)) return;
  await db.transaction().execute(async (trx) => {
    await lockSigningKeys(trx);
    if (await rsaKey(trx)) return;
    await storeSigningKey(trx, ring, newRsaKey(), { origin: 'generated' });
  });
}

/**
 * The keys the provider publishes now, each algorithm's signing key before its other keys (the RS256 signing key
 * first), and when that answer changes by time alone (signing-key-timeline.ts). With KeyManagement:Enabled false the
 * keys are taken as stored: every one is published and the newest that every instance has seen signs. With no RS256
 * key stored, one RSA key is made first.
 */
export async function currentSigningKeys(
  db: Db,
  ring: KeyRing,
  settings: KeyManagementSettings = DEFAULT_KEY_MANAGEMENT,
  now = new Date(),
): Promise<{ published: SigningJwk[]; signing: SigningJwk | undefined; changesAt: Date | undefined }> {
  await ensureSigningKey(db, ring);
  const stored = await readSigningKeys(db, ring);
  const keys = settings.Enabled ? stored : stored.map((k) => ({ ...k, origin: 'static' as const }));
  const { published, signing, changesAt } = signingKeysAt(keys, now, settings);
  return { published: published.map((k) => k.jwk), signing: signing?.jwk, changesAt };
}

/** The published keys, the RS256 signing key first (see currentSigningKeys). */
export async function loadSigningKeys(
  db: Db,
  ring: KeyRing,
  settings: KeyManagementSettings = DEFAULT_KEY_MANAGEMENT,
): Promise<SigningJwk[]> {
  return (await currentSigningKeys(db, ring, settings)).published;
}

/** What one rotation did, and the keys as it left them (times only). */
export type RotationOutcome = { created?: string; deleted: string[]; keys: TimedKey[] };

/**
 * One rotation step, as IdentityServer's KeyManager does it when it loads keys, under the lock so that it runs once
 * however many run it at once: retired keys are deleted (FilterAndDeleteRetiredKeysAsync), and a new RSA key, created
 * now, is stored when one is due (IsKeyRotationRequired). Running it twice in a row changes nothing the second time.
 */
export async function rotateSigningKeys(
  db: Db,
  ring: KeyRing,
  times: KeyManagementTimes,
  now = new Date(),
): Promise<RotationOutcome> {
  return db.transaction().execute(async (trx) => {
    await lockSigningKeys(trx);
    const rows = (await trx.selectFrom('signing_keys').select(timedColumns).execute()).map(timed);
    const retired = rows.filter((k) => k.origin !== 'static' && isRetired(k.createdAt, now, times)).map((k) => k.id);
    if (retired.length > 0) await trx.deleteFrom('signing_keys').where('id', 'in', retired).execute();
    const kept = rows.filter((k) => !retired.includes(k.id));
    if (!isNewKeyDue(kept, now, times)) return { deleted: retired, keys: kept };
    const jwk = newRsaKey();
    await storeSigningKey(trx, ring, jwk, { origin: 'generated', createdAt: now });
    const created = { id: jwk.kid, algorithm: jwk.alg, createdAt: now, storedAt: now, origin: 'generated' as const };
    return { created: jwk.kid, deleted: retired, keys: [...kept, created] };
  });
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
