import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DOMParser } from '@xmldom/xmldom';

/** What is read of an XML element (xmldom's nodes, typed here as far as they are used). */
interface Element {
  nodeType: number;
  nodeName: string;
  localName?: string | null;
  textContent: string | null;
  childNodes: ArrayLike<unknown>;
  getAttribute(name: string): string | null;
}

/**
 * A reader (and, for fixtures and re-sealing tests, a writer) of ASP.NET Core Data Protection payloads, so data a .NET
 * application protected (IdentityServer's persisted grants) opens here with `node:crypto` alone. Built from the
 * `dotnet/aspnetcore` sources (src/DataProtection/DataProtection/src: KeyRingBasedDataProtector.cs,
 * Managed/ManagedAuthenticatedEncryptor.cs, SP800_108/ManagedSP800_108_CTR_HMACSHA512.cs, XmlKeyManager.cs) and checked
 * against the known answers of its tests (SP800_108Tests, ManagedAuthenticatedEncryptorTests.Encrypt_KnownKey,
 * AdditionalAuthenticatedDataTemplateTests): see test/unit/aspnet-data-protection.test.ts.
 *
 * What it covers: keys stored as XML with the master key in the clear (the default on Linux and with EF Core or file
 * storage) and the CBC + HMAC algorithms (AES-128/192/256-CBC with HMAC-SHA256 or -SHA512; AES-256-CBC with
 * HMAC-SHA256 is the default). A master key encrypted with DPAPI or a certificate, and the GCM algorithms, are named
 * as such (`key-encrypted`, `unsupported-algorithm`) rather than opened.
 */

/** Why a payload did not open: each a different fix for an operator (see reasonText). */
export type UnprotectFailure =
  'not-protected' | 'unknown-key' | 'key-revoked' | 'key-encrypted' | 'unsupported-algorithm' | 'wrong-purpose';

export class DataProtectionError extends Error {
  constructor(
    readonly reason: UnprotectFailure,
    message: string,
  ) {
    super(message);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// SP800-108 counter-mode KDF with HMAC-SHA512 (ManagedSP800_108_CTR_HMACSHA512.DeriveKeys)

/**
 * PRF input per iteration i: [i]₃₂ ‖ label ‖ 0x00 ‖ contextHeader ‖ context ‖ [L in bits]₃₂, big-endian; the outputs
 * are concatenated and cut to `length` bytes.
 */
export function deriveKeySp800108(
  kdk: Buffer,
  label: Buffer,
  contextHeader: Buffer,
  context: Buffer,
  length: number,
): Buffer {
  const tail = Buffer.alloc(4);
  tail.writeUInt32BE(length * 8);
  const out: Buffer[] = [];
  for (let i = 1, produced = 0; produced < length; i++, produced += 64) {
    const counter = Buffer.alloc(4);
    counter.writeUInt32BE(i);
    out.push(
      createHmac('sha512', kdk)
        .update(Buffer.concat([counter, label, Buffer.from([0]), contextHeader, context, tail]))
        .digest(),
    );
  }
  return Buffer.concat(out).subarray(0, length);
}

// ---------------------------------------------------------------------------------------------------------------
// CBC + HMAC authenticated encryption (ManagedAuthenticatedEncryptor)

export interface CbcHmacAlgorithm {
  /** AES key size in bytes: 16, 24 or 32. */
  keyBytes: 16 | 24 | 32;
  hmac: 'sha256' | 'sha512';
}

const KEY_MODIFIER_BYTES = 16;
const BLOCK_BYTES = 16;
const digestBytes = (hmac: CbcHmacAlgorithm['hmac']) => (hmac === 'sha256' ? 32 : 64);
const aes = (alg: CbcHmacAlgorithm) => `aes-${alg.keyBytes * 8}-cbc`;

/**
 * The context header binds the algorithm choice into every derived key: 0x00 (KDF) ‖ 0x00 (CBC+HMAC) ‖ key size ‖
 * block size ‖ HMAC key size ‖ HMAC digest size (each 32-bit big-endian) ‖ E("") ‖ MAC(""), where E and MAC use keys
 * derived from an empty KDK, and E has an all-zero IV.
 */
export function cbcContextHeader(alg: CbcHmacAlgorithm): Buffer {
  const name = `${alg.keyBytes}:${alg.hmac}`;
  const known = contextHeaders.get(name);
  if (known) return known;
  const header = contextHeaderOf(alg);
  contextHeaders.set(name, header);
  return header;
}

/** The header depends on the algorithm alone: made once for each, as the .NET encryptor makes it once. */
const contextHeaders = new Map<string, Buffer>();

function contextHeaderOf(alg: CbcHmacAlgorithm): Buffer {
  const macBytes = digestBytes(alg.hmac);
  const sizes = Buffer.alloc(18);
  sizes.writeUInt32BE(alg.keyBytes, 2);
  sizes.writeUInt32BE(BLOCK_BYTES, 6);
  sizes.writeUInt32BE(macBytes, 10);
  sizes.writeUInt32BE(macBytes, 14);
  const empty = Buffer.alloc(0);
  const temp = deriveKeySp800108(empty, empty, empty, empty, alg.keyBytes + macBytes);
  const cipher = createCipheriv(aes(alg), temp.subarray(0, alg.keyBytes), Buffer.alloc(BLOCK_BYTES));
  const encryptedEmpty = Buffer.concat([cipher.update(empty), cipher.final()]);
  const macOfEmpty = createHmac(alg.hmac, temp.subarray(alg.keyBytes)).update(empty).digest();
  return Buffer.concat([sizes, encryptedEmpty, macOfEmpty]);
}

function subkeys(kdk: Buffer, alg: CbcHmacAlgorithm, aad: Buffer, keyModifier: Buffer) {
  const both = deriveKeySp800108(kdk, aad, cbcContextHeader(alg), keyModifier, alg.keyBytes + digestBytes(alg.hmac));
  return { encryption: both.subarray(0, alg.keyBytes), validation: both.subarray(alg.keyBytes) };
}

/** keyModifier ‖ IV ‖ AES-CBC(plaintext) ‖ HMAC(IV ‖ ciphertext); `random` supplies the 16 + 16 bytes (tests fix them). */
export function encryptCbcHmac(
  kdk: Buffer,
  alg: CbcHmacAlgorithm,
  plaintext: Buffer,
  aad: Buffer,
  random: (size: number) => Buffer = randomBytes,
): Buffer {
  const keyModifier = random(KEY_MODIFIER_BYTES);
  const iv = random(BLOCK_BYTES);
  const keys = subkeys(kdk, alg, aad, keyModifier);
  const cipher = createCipheriv(aes(alg), keys.encryption, iv);
  const ivAndCiphertext = Buffer.concat([iv, cipher.update(plaintext), cipher.final()]);
  const mac = createHmac(alg.hmac, keys.validation).update(ivAndCiphertext).digest();
  return Buffer.concat([keyModifier, ivAndCiphertext, mac]);
}

/** The reverse of encryptCbcHmac; a MAC that does not match (other key, other purposes, tampering) throws. */
export function decryptCbcHmac(kdk: Buffer, alg: CbcHmacAlgorithm, payload: Buffer, aad: Buffer): Buffer {
  const macBytes = digestBytes(alg.hmac);
  if (payload.length < KEY_MODIFIER_BYTES + BLOCK_BYTES + macBytes)
    throw new DataProtectionError('not-protected', 'the payload is too short');
  const keyModifier = payload.subarray(0, KEY_MODIFIER_BYTES);
  const ivAndCiphertext = payload.subarray(KEY_MODIFIER_BYTES, payload.length - macBytes);
  const keys = subkeys(kdk, alg, aad, keyModifier);
  const expected = createHmac(alg.hmac, keys.validation).update(ivAndCiphertext).digest();
  if (!timingSafeEqual(expected, payload.subarray(payload.length - macBytes)))
    throw new DataProtectionError(
      'wrong-purpose',
      'the payload does not open with its key for these purposes: the application name (discriminator) or the purposes differ, or the payload was changed',
    );
  const decipher = createDecipheriv(aes(alg), keys.encryption, ivAndCiphertext.subarray(0, BLOCK_BYTES));
  return Buffer.concat([decipher.update(ivAndCiphertext.subarray(BLOCK_BYTES)), decipher.final()]);
}

// ---------------------------------------------------------------------------------------------------------------
// The protected payload (KeyRingBasedDataProtector)

/** 0x09F0C9F0: a version-0 payload of KeyRingBasedDataProtector (its first bytes print as "CfDJ8" in base64). */
const MAGIC_HEADER = 0x09f0c9f0;

/** A .NET Guid as Guid.ToByteArray writes it: the first three groups little-endian, the rest as written. */
export function guidBytes(id: string): Buffer {
  const hex = id.replace(/-/g, '');
  if (!/^[0-9a-fA-F]{32}$/.test(hex)) throw new Error(`not a GUID: ${id}`);
  const b = Buffer.from(hex, 'hex');
  return Buffer.concat([
    b.subarray(0, 4).reverse(),
    b.subarray(4, 6).reverse(),
    b.subarray(6, 8).reverse(),
    b.subarray(8),
  ]);
}

export function guidOf(bytes: Buffer): string {
  const b = Buffer.from(bytes);
  const hex = Buffer.concat([
    b.subarray(0, 4).reverse(),
    b.subarray(4, 6).reverse(),
    b.subarray(6, 8).reverse(),
    b.subarray(8, 16),
  ]).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** BinaryWriter.Write7BitEncodedInt: seven bits a byte, low first, the high bit set while more follow. */
function sevenBitLength(n: number): Buffer {
  const out: number[] = [];
  for (let v = n; ; v >>>= 7) {
    if (v < 0x80) {
      out.push(v);
      return Buffer.from(out);
    }
    out.push((v & 0x7f) | 0x80);
  }
}

/** The additional authenticated data: magic header ‖ key id ‖ purpose count (32-bit BE) ‖ (7-bit length ‖ UTF-8)*. */
export function additionalData(keyId: string, purposes: readonly string[]): Buffer {
  const head = Buffer.alloc(4);
  head.writeUInt32BE(MAGIC_HEADER);
  const count = Buffer.alloc(4);
  count.writeInt32BE(purposes.length);
  const encoded = purposes.flatMap((p) => {
    const utf8 = Buffer.from(p, 'utf8');
    return [sevenBitLength(utf8.length), utf8];
  });
  return Buffer.concat([head, guidBytes(keyId), count, ...encoded]);
}

// ---------------------------------------------------------------------------------------------------------------
// The key ring (XmlKeyManager's documents: <key> elements and <revocation> elements)

export interface DataProtectionKey {
  id: string;
  creationDate?: Date;
  activationDate?: Date;
  expirationDate?: Date;
  /** Set when the key can open payloads: its algorithm is supported and its master key is in the clear. */
  material?: { masterKey: Buffer; algorithm: CbcHmacAlgorithm };
  /** Why it cannot, when it cannot. */
  problem?: { reason: 'key-encrypted' | 'unsupported-algorithm'; detail: string };
}

export interface DataProtectionKeyRing {
  keys: Map<string, DataProtectionKey>;
  /** Keys revoked one by one, and the date before which every key created is revoked (a "revoke all"). */
  revokedIds: Set<string>;
  revokedCreatedBefore?: Date;
}

const childrenNamed = (parent: Element, name: string): Element[] =>
  Array.from(parent.childNodes as unknown as ArrayLike<Element>).filter(
    (n) => n.nodeType === 1 && (n.localName ?? n.nodeName) === name,
  );
const childText = (parent: Element, name: string) => childrenNamed(parent, name)[0]?.textContent?.trim();
const dateOf = (text: string | undefined) => (text ? new Date(text) : undefined);

/**
 * The algorithm of a descriptor, in each of the shapes the descriptor deserializers write:
 * AuthenticatedEncryptorDescriptor (`AES_256_CBC` / `HMACSHA256`), ManagedAuthenticatedEncryptorDescriptor
 * (`Aes` with keyLength / `HMACSHA256`) and CngCbcAuthenticatedEncryptorDescriptor (`AES` with keyLength, a `hash`
 * of `SHA256`), whose payloads are the same; GCM descriptors are not supported.
 */
function algorithmOf(descriptor: Element): CbcHmacAlgorithm | string {
  const encryption = childrenNamed(descriptor, 'encryption')[0];
  const validation = childrenNamed(descriptor, 'validation')[0] ?? childrenNamed(descriptor, 'hash')[0];
  const name = encryption?.getAttribute('algorithm') ?? '';
  const standard = /^AES_(128|192|256)_(CBC|GCM)$/i.exec(name);
  if (standard?.[2].toUpperCase() === 'GCM') return `${name} (GCM)`;
  const bits = standard ? Number(standard[1]) : /^aes$/i.test(name) ? Number(encryption?.getAttribute('keyLength')) : 0;
  if (![128, 192, 256].includes(bits)) return name || 'no encryption algorithm';
  const mac = (validation?.getAttribute('algorithm') ?? '').toUpperCase().replace(/^HMAC/, '');
  if (!standard && !validation) return `${name} without a validation algorithm`;
  if (mac !== 'SHA256' && mac !== 'SHA512') return validation?.getAttribute('algorithm') ?? 'no validation algorithm';
  return { keyBytes: (bits / 8) as 16 | 24 | 32, hmac: mac === 'SHA256' ? 'sha256' : 'sha512' };
}

function keyOf(element: Element): DataProtectionKey {
  const id = (element.getAttribute('id') ?? '').toLowerCase();
  const key: DataProtectionKey = {
    id,
    creationDate: dateOf(childText(element, 'creationDate')),
    activationDate: dateOf(childText(element, 'activationDate')),
    expirationDate: dateOf(childText(element, 'expirationDate')),
  };
  const outer = childrenNamed(element, 'descriptor')[0];
  const descriptor = outer && childrenNamed(outer, 'descriptor')[0];
  if (!descriptor) return { ...key, problem: { reason: 'unsupported-algorithm', detail: 'the key has no descriptor' } };
  const algorithm = algorithmOf(descriptor);
  if (typeof algorithm === 'string')
    return { ...key, problem: { reason: 'unsupported-algorithm', detail: `the key's algorithm is ${algorithm}` } };
  const masterKey = childrenNamed(descriptor, 'masterKey')[0];
  const encrypted = masterKey && childrenNamed(masterKey, 'encryptedSecret')[0];
  if (encrypted)
    return {
      ...key,
      problem: {
        reason: 'key-encrypted',
        detail: `the master key is encrypted (${(encrypted.getAttribute('decryptorType') ?? '').split(',')[0] || 'by a decryptor'}): decrypt the key ring at the source first`,
      },
    };
  const value = masterKey && childText(masterKey, 'value');
  if (!value)
    return { ...key, problem: { reason: 'unsupported-algorithm', detail: 'the key has no master key value' } };
  return { ...key, material: { masterKey: Buffer.from(value, 'base64'), algorithm } };
}

/**
 * A key ring from the documents XmlKeyManager writes: each `key-{id}.xml` (a `<key>`), each `revocation-*.xml` (a
 * `<revocation>`), or the `Xml` column of EF Core's DataProtectionKeys table, which holds the same elements.
 */
export function parseKeyRing(documents: Iterable<string>): DataProtectionKeyRing {
  const ring: DataProtectionKeyRing = { keys: new Map(), revokedIds: new Set() };
  for (const text of documents) {
    const root = (
      new DOMParser({ errorHandler: { warning: () => undefined, error: () => undefined } }).parseFromString(
        text,
        'text/xml',
      ) as unknown as { documentElement?: Element | null }
    )?.documentElement;
    if (!root) continue;
    const name = root.localName ?? root.nodeName;
    if (name === 'key') {
      const key = keyOf(root);
      if (key.id) ring.keys.set(key.id, key);
    } else if (name === 'revocation') {
      const revoked = childrenNamed(root, 'key')[0]?.getAttribute('id')?.toLowerCase();
      if (revoked === '*') {
        const date = dateOf(childText(root, 'revocationDate'));
        if (date && (!ring.revokedCreatedBefore || date > ring.revokedCreatedBefore)) ring.revokedCreatedBefore = date;
      } else if (revoked) ring.revokedIds.add(revoked);
    }
  }
  return ring;
}

/** A key ring document and the name it is kept under (a file's name, or the row's id in the source's table). */
export interface KeyRingDocument {
  name: string;
  xml: string;
}

/** The key-*.xml and revocation-*.xml documents of a FileSystemXmlRepository folder, in name order. */
export async function readKeyRingFolder(folder: string): Promise<KeyRingDocument[]> {
  const files = (await readdir(folder)).filter((f) => f.toLowerCase().endsWith('.xml')).sort();
  return Promise.all(files.map(async (name) => ({ name, xml: await readFile(join(folder, name), 'utf8') })));
}

/** A key as XmlKeyManager writes it with the master key in the clear (fixtures, and tests of this reader). */
export function keyXml(key: {
  id: string;
  masterKey: Buffer;
  created: Date;
  expires: Date;
  encryption?: string;
  validation?: string;
}): string {
  return `<?xml version="1.0" encoding="utf-8"?>
<key id="${key.id}" version="1">
  <creationDate>${key.created.toISOString()}</creationDate>
  <activationDate>${key.created.toISOString()}</activationDate>
  <expirationDate>${key.expires.toISOString()}</expirationDate>
  <descriptor deserializerType="Microsoft.AspNetCore.DataProtection.AuthenticatedEncryption.ConfigurationModel.AuthenticatedEncryptorDescriptorDeserializer, Microsoft.AspNetCore.DataProtection, Version=8.0.0.0, Culture=neutral, PublicKeyToken=adb9793829ddae60">
    <descriptor>
      <encryption algorithm="${key.encryption ?? 'AES_256_CBC'}" />
      <validation algorithm="${key.validation ?? 'HMACSHA256'}" />
      <masterKey p4:requiresEncryption="true" xmlns:p4="http://schemas.asp.net/2015/03/dataProtection">
        <!-- Warning: the key below is in an unencrypted form. -->
        <value>${key.masterKey.toString('base64')}</value>
      </masterKey>
    </descriptor>
  </descriptor>
</key>`;
}

// ---------------------------------------------------------------------------------------------------------------
// Protect and unprotect, as IDataProtector does for a chain of purposes

/**
 * Opens a payload protected for `purposes` (the application discriminator first, as the host's root protector adds
 * it, then each CreateProtector purpose). A revoked key refuses, as IDataProtector.Unprotect does.
 */
export function unprotect(ring: DataProtectionKeyRing, purposes: readonly string[], payload: Buffer): Buffer {
  if (payload.length < 20 || payload.readUInt32BE(0) !== MAGIC_HEADER)
    throw new DataProtectionError('not-protected', 'not a Data Protection payload (no magic header)');
  const keyId = guidOf(payload.subarray(4, 20));
  const key = ring.keys.get(keyId);
  if (!key) throw new DataProtectionError('unknown-key', `key ${keyId} is not in the key ring`);
  const revoked =
    ring.revokedIds.has(keyId) ||
    (ring.revokedCreatedBefore !== undefined &&
      key.creationDate !== undefined &&
      key.creationDate < ring.revokedCreatedBefore);
  if (revoked) throw new DataProtectionError('key-revoked', `key ${keyId} is revoked`);
  if (!key.material) throw new DataProtectionError(key.problem!.reason, `key ${keyId}: ${key.problem!.detail}`);
  const { masterKey, algorithm } = key.material;
  try {
    return decryptCbcHmac(masterKey, algorithm, payload.subarray(20), additionalData(keyId, purposes));
  } catch (error) {
    if (error instanceof DataProtectionError) throw error;
    throw new DataProtectionError(
      'wrong-purpose',
      `the payload does not open with key ${keyId}: ${(error as Error).message}`,
    );
  }
}

/** A payload as IDataProtector.Protect writes it with this key (for fixtures and tests). */
export function protect(
  key: { id: string; masterKey: Buffer; algorithm?: CbcHmacAlgorithm },
  purposes: readonly string[],
  plaintext: Buffer,
): Buffer {
  const head = Buffer.alloc(4);
  head.writeUInt32BE(MAGIC_HEADER);
  const algorithm = key.algorithm ?? { keyBytes: 32, hmac: 'sha256' };
  const body = encryptCbcHmac(key.masterKey, algorithm, plaintext, additionalData(key.id, purposes));
  return Buffer.concat([head, guidBytes(key.id), body]);
}
