import type { KeyObject } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Kysely } from 'kysely';
import { z } from 'zod';
import {
  DataProtectionError,
  unprotect,
  type DataProtectionKeyRing,
  type UnprotectFailure,
} from '../../platform/security/aspnet-data-protection';
import { hasColumn } from './configuration-reads';
import type { SourceDatabase } from './source-schema';
import { isRetired, type KeyManagementTimes } from '../../platform/security/signing-key-timeline';
import { PfxError, readPfx } from '../../platform/security/pkcs12';
import {
  CURVE_OF,
  privateKeyFromJwk,
  SIGNING_ALGORITHMS,
  signingJwk,
  SigningKeyError,
  withCertificate,
  type PrivateSigningJwk,
} from '../../platform/security/signing-key-material';

/**
 * The signing keys of a Duende IdentityServer with automatic key management, as its stores keep them: rows of the
 * operational store's `Keys` table (EntityFramework.Storage SigningKeyStore.cs: `Use` = "signing") or the
 * `is-signing-key-{kid}.json` files of a FileSystemKeyStore (FileSystemKeyStore.cs: KeySerializer's JSON of a
 * SerializedKey, written with File.WriteAllText(…, Encoding.UTF8), so with a BOM). Each is a SerializedKey
 * (SerializedKey.cs) whose `Data` is a key container (KeyContainer.cs) as KeySerializer.cs writes it: System.Text.Json
 * with IncludeFields, so RSAParameters' and ECPoint's public fields are there, byte arrays as base64.
 */

/** Duende's SerializedKey: one signing key as a store keeps it. */
export interface SerializedKey {
  Id: string;
  Version: number;
  Created: Date;
  Algorithm: string;
  IsX509Certificate: boolean;
  DataProtected: boolean;
  Data: string;
}

/** The purpose Duende's DataProtectionKeyProtector protects keys for: `CreateProtector(nameof(DataProtectionKeyProtector))`. */
export const KEY_PROTECTOR_PURPOSE = 'DataProtectionKeyProtector';

/** The Keys table's signing keys (the table also holds other uses, such as Duende's server-side session keys). */
export async function readSigningKeyRows(source: Kysely<SourceDatabase>): Promise<SerializedKey[] | undefined> {
  if (!(await hasColumn(source, 'Keys', 'Data'))) return undefined;
  return source
    .selectFrom('Keys')
    .select(['Id', 'Version', 'Created', 'Algorithm', 'IsX509Certificate', 'DataProtected', 'Data'])
    .where('Use', '=', 'signing')
    .orderBy('Id')
    .execute();
}

/** .NET's DateTime in System.Text.Json: ISO 8601, with or without an offset (a UTC DateTime ends in Z). */
const dotnetDate = z
  .string()
  .transform((t) => new Date(/[zZ]|[+-]\d\d:\d\d$/.test(t) ? t : `${t}Z`))
  .refine((d) => !Number.isNaN(d.getTime()));

const serializedKeyJson = z.object({
  Version: z.number(),
  Id: z.string().min(1),
  Created: dotnetDate,
  Algorithm: z.string(),
  IsX509Certificate: z.boolean(),
  Data: z.string(),
  DataProtected: z.boolean(),
});

export type KeyFile = { file: string } & ({ key: SerializedKey } | { problem: string });

const KEY_FILE = /^is-signing-key-.+\.json$/i;

/** A FileSystemKeyStore folder's keys, each file's name with its key or why it is not one. */
export async function readKeyFolder(path: string): Promise<KeyFile[]> {
  const files = (await readdir(path)).filter((f) => KEY_FILE.test(f)).sort();
  return Promise.all(
    files.map(async (file): Promise<KeyFile> => {
      const text = (await readFile(join(path, file), 'utf8')).replace(/^\uFEFF/, '');
      try {
        const parsed = serializedKeyJson.safeParse(JSON.parse(text));
        if (parsed.success) return { file, key: parsed.data };
      } catch {
        // Not JSON: the same answer as JSON of another shape.
      }
      return { file, problem: 'not a serialized key' };
    }),
  );
}

/** Why a source key is not imported, as the report counts them: each names what an operator can do. */
export const NOT_IMPORTED = {
  unreadable: 'unreadable (not a serialized key, or a container of another shape)',
  noKeyRing: 'no key ring (set Migration:SourceDataProtection:KeyRingPath, or keep DataProtectionKeys in the source)',
  'wrong-purpose': 'does not open (another application name, or the data was changed)',
  'unknown-key': 'missing key (the key that protected it is not in the key ring)',
  'key-revoked': 'revoked key',
  'key-encrypted': 'key encrypted at the source (DPAPI or a certificate)',
  'unsupported-algorithm': 'unsupported key algorithm',
  'not-protected': 'unreadable protected data',
  unknownContainer: 'unknown key container (an algorithm IdentityServer does not sign with)',
  unsupportedSigningAlgorithm: 'unsupported signing algorithm',
  notAKey: 'not a working key (its parameters do not belong together)',
  noPrivateKey: 'certificate without a private key',
  certificateUnreadable: 'certificate that cannot be read',
  noServiceRing: 'this worker has no DataProtection:Keys to seal it with',
} as const satisfies Record<string, string> & Record<UnprotectFailure, string>;

export type NotImportedReason = (typeof NOT_IMPORTED)[keyof typeof NOT_IMPORTED];

export type OpenedKey =
  | { opened: true; jwk: PrivateSigningJwk; createdAt: Date }
  | { opened: false; retired: true }
  | { opened: false; retired?: false; reason: NotImportedReason };

const b64url = (base64: string) => Buffer.from(base64, 'base64').toString('base64url');

/** RsaKeyContainer (RsaKeyContainer.cs): RSAParameters, a struct whose byte-array fields IncludeFields writes. */
const rsaContainer = z.object({
  Parameters: z.object({
    D: z.string(),
    DP: z.string(),
    DQ: z.string(),
    Exponent: z.string(),
    InverseQ: z.string(),
    Modulus: z.string(),
    P: z.string(),
    Q: z.string(),
  }),
});
/** EcKeyContainer (EcKeyContainer.cs): the private scalar D and the public point Q (an ECPoint struct: X, Y). */
const ecContainer = z.object({ D: z.string(), Q: z.object({ X: z.string(), Y: z.string() }) });
/** X509KeyContainer (X509KeyContainer.cs): the certificate and its key as a PFX with no password, in base64. */
const x509Container = z.object({ CertificateRawData: z.string() });

/**
 * The private key a container holds (with its certificate, for an X509KeyContainer), chosen as
 * DataProtectionKeyProtector.Unprotect chooses the container type.
 */
function containerKey(key: SerializedKey, json: unknown): { privateKey: KeyObject; certificate?: Buffer } | undefined {
  if (key.IsX509Certificate) {
    const x509 = x509Container.safeParse(json);
    return x509.success ? readPfx(Buffer.from(x509.data.CertificateRawData, 'base64')) : undefined;
  }
  if (/^[RP]/.test(key.Algorithm)) {
    const rsa = rsaContainer.safeParse(json);
    if (!rsa.success) return undefined;
    const p = rsa.data.Parameters;
    const privateKey = privateKeyFromJwk({
      kty: 'RSA',
      ...{ n: b64url(p.Modulus), e: b64url(p.Exponent), d: b64url(p.D), p: b64url(p.P), q: b64url(p.Q) },
      ...{ dp: b64url(p.DP), dq: b64url(p.DQ), qi: b64url(p.InverseQ) },
    });
    return { privateKey };
  }
  const ec = ecContainer.safeParse(json);
  if (!ec.success) return undefined;
  const { D, Q } = ec.data;
  const crv = CURVE_OF[key.Algorithm];
  return { privateKey: privateKeyFromJwk({ kty: 'EC', crv, d: b64url(D), x: b64url(Q.X), y: b64url(Q.Y) }) };
}

/** How the source protected its keys: its key ring and application name. */
export interface KeyProtection {
  ring?: DataProtectionKeyRing;
  applicationName: string;
}

/** The container's JSON, opened with the source's key ring when protected (Protect(string) writes base64url). */
function containerJson(
  key: SerializedKey,
  protection: KeyProtection,
): { json: unknown } | { reason: NotImportedReason } {
  let text = key.Data;
  if (key.DataProtected) {
    if (!protection.ring) return { reason: NOT_IMPORTED.noKeyRing };
    try {
      // The application discriminator first, then the protector's purpose, as for the source's persisted grants.
      const purposes = [protection.applicationName, KEY_PROTECTOR_PURPOSE];
      text = unprotect(protection.ring, purposes, Buffer.from(key.Data, 'base64url')).toString('utf8');
    } catch (error) {
      return { reason: error instanceof DataProtectionError ? NOT_IMPORTED[error.reason] : NOT_IMPORTED.unreadable };
    }
  }
  try {
    return { json: JSON.parse(text) as unknown };
  } catch {
    return { reason: NOT_IMPORTED.unreadable };
  }
}

/**
 * A source key, opened: its private JWK under its own kid with its creation time, or retired (older than
 * RotationInterval + RetentionDuration: KeyManager drops such keys), or why it cannot be imported.
 */
export function openSerializedKey(
  key: SerializedKey,
  protection: KeyProtection,
  now: Date,
  times: KeyManagementTimes,
): OpenedKey {
  if (isRetired(key.Created, now, times)) return { opened: false, retired: true };
  if (!key.IsX509Certificate && !/^[RPE]/.test(key.Algorithm))
    return { opened: false, reason: NOT_IMPORTED.unknownContainer };
  if (!SIGNING_ALGORITHMS.includes(key.Algorithm))
    return { opened: false, reason: NOT_IMPORTED.unsupportedSigningAlgorithm };
  const opened = containerJson(key, protection);
  if ('reason' in opened) return { opened: false, reason: opened.reason };
  try {
    const contained = containerKey(key, opened.json);
    if (!contained) return { opened: false, reason: NOT_IMPORTED.unreadable };
    const { privateKey, certificate } = contained;
    const jwk = withCertificate(signingJwk(privateKey, key.Algorithm, key.Id), privateKey, certificate);
    return { opened: true, jwk, createdAt: key.Created };
  } catch (error) {
    return { opened: false, reason: reasonOf(error) };
  }
}

function reasonOf(error: unknown): NotImportedReason {
  if (error instanceof PfxError)
    return error.reason === 'no-private-key' ? NOT_IMPORTED.noPrivateKey : NOT_IMPORTED.certificateUnreadable;
  if (error instanceof SigningKeyError)
    return error.reason === 'not-a-key' ? NOT_IMPORTED.notAKey : NOT_IMPORTED.unsupportedSigningAlgorithm;
  return NOT_IMPORTED.unreadable;
}
