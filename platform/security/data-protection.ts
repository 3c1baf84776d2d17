import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * The data-protection key ring: every secret the service keeps at rest (app keys, TOTP secrets, later signing keys
 * and provider secrets) is sealed with AES-256-GCM under one of these keys. New values use the primary (first) key;
 * a value names its key id, so older keys still open older values and keys rotate without rewriting rows.
 */
export interface KeyRing {
  primary: { id: string; key: Buffer };
  keys: ReadonlyMap<string, Buffer>;
}

/** The id the single `DataProtection:Key` of earlier configurations goes by. */
export const LEGACY_KEY_ID = 'default';

export function createKeyRing(
  entries: ReadonlyArray<{ id: string; key: Buffer }>,
  what = 'data-protection key',
): KeyRing {
  if (entries.length === 0) throw new Error('a key ring needs at least one key');
  for (const { id, key } of entries) {
    if (key.length !== 32) throw new Error(`${what} ${id} is not 32 bytes`);
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(id))
      throw new Error(`${what} id ${id} must be 1-64 letters, digits, ".", "_" or "-"`);
  }
  return { primary: entries[0], keys: new Map(entries.map((e) => [e.id, e.key])) };
}

/** AES-256-GCM: iv | tag | ciphertext. */
export function sealBytes(plain: Uint8Array, key: Buffer): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const encrypted = Buffer.concat([cipher.update(plain), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), encrypted]);
}

export function openBytes(sealed: Uint8Array, key: Buffer): Buffer {
  const bytes = Buffer.from(sealed);
  const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, 12));
  decipher.setAuthTag(bytes.subarray(12, 28));
  return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]);
}

const seal = (secret: Buffer, key: Buffer) => sealBytes(secret, key).toString('base64');
const open = (sealed: string, key: Buffer) => openBytes(Buffer.from(sealed, 'base64'), key);

/** `v2:{keyId}:` + base64(iv | tag | ciphertext). */
export function protectSecret(secret: Buffer, ring: KeyRing): string {
  return `v2:${ring.primary.id}:${seal(secret, ring.primary.key)}`;
}

export const protectText = (text: string, ring: KeyRing) => protectSecret(Buffer.from(text, 'utf8'), ring);

/**
 * Opens a protected value. `v1:` values (written before key ids existed, under the single `DataProtection:Key`)
 * carry no key id: each key of the ring is tried.
 */
export function unprotectSecret(value: string, ring: KeyRing): Buffer {
  const v2 = /^v2:([^:]+):(.*)$/s.exec(value);
  if (v2) {
    const key = ring.keys.get(v2[1]);
    if (!key) throw new Error(`protected with data-protection key ${v2[1]}, which is not in DataProtection:Keys`);
    return open(v2[2], key);
  }
  if (value.startsWith('v1:')) {
    for (const key of ring.keys.values()) {
      try {
        return open(value.slice(3), key);
      } catch {
        // not this key
      }
    }
    throw new Error('protected with a data-protection key that is not in DataProtection:Keys');
  }
  throw new Error('not a protected secret');
}

export const unprotectText = (value: string, ring: KeyRing) => unprotectSecret(value, ring).toString('utf8');
