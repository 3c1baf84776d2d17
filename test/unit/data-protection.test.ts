import { createCipheriv, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../../platform/config/load';
import {
  createKeyRing,
  protectSecret,
  protectText,
  unprotectSecret,
  unprotectText,
} from '../../platform/security/data-protection';
import { KEY_FILE, keyRingFromConfig, withEmbeddedKey } from '../../platform/config/key-ring';

const older = { id: 'older', key: randomBytes(32) };
const newer = { id: 'newer', key: randomBytes(32) };

/** The `v1:` form written before key ids existed. */
function legacySeal(secret: Buffer, key: Buffer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const encrypted = Buffer.concat([cipher.update(secret), cipher.final()]);
  return `v1:${Buffer.concat([iv, cipher.getAuthTag(), encrypted]).toString('base64')}`;
}

describe('the data-protection key ring', () => {
  test('new values name the primary key; after rotation older values still open', () => {
    const sealed = protectText('app-key', createKeyRing([older]));
    expect(sealed).toMatch(/^v2:older:/);
    expect(sealed).not.toContain('app-key');
    const rotated = createKeyRing([newer, older]);
    expect(unprotectText(sealed, rotated)).toBe('app-key');
    expect(protectText('app-key', rotated)).toMatch(/^v2:newer:/);
  });

  test('a value sealed with a key the ring no longer holds names that key', () => {
    expect(() => unprotectText(protectText('x', createKeyRing([older])), createKeyRing([newer]))).toThrow(
      /key older, which is not in DataProtection:Keys/,
    );
  });

  test('v1 values (the single DataProtection:Key of earlier releases) open with any key of the ring', () => {
    const secret = randomBytes(20);
    expect(unprotectSecret(legacySeal(secret, older.key), createKeyRing([newer, older]))).toEqual(secret);
    expect(() => unprotectSecret(legacySeal(secret, older.key), createKeyRing([newer]))).toThrow(
      /not in DataProtection:Keys/,
    );
  });

  test('a tampered value does not open', () => {
    const ring = createKeyRing([older]);
    const sealed = protectSecret(Buffer.from('secret'), ring);
    const bytes = Buffer.from(sealed.split(':')[2], 'base64');
    bytes[bytes.length - 1] ^= 1;
    expect(() => unprotectSecret(`v2:older:${bytes.toString('base64')}`, ring)).toThrow();
  });

  test('configuration: DataProtection:Keys from environment variables, the single Key kept as id "default"', () => {
    const config = loadConfig({
      base: { DataProtection: { Key: older.key.toString('base64') } },
      env: { DataProtection__Keys__0__Id: 'newer', DataProtection__Keys__0__Key: newer.key.toString('base64') },
      argv: [],
    });
    const ring = keyRingFromConfig(config)!;
    expect(ring.primary.id).toBe('newer');
    expect([...ring.keys.keys()]).toEqual(['newer', 'default']);
    expect(keyRingFromConfig(loadConfig({ base: {}, env: {}, argv: [] }))).toBeUndefined();
    expect(() =>
      loadConfig({
        base: {},
        env: { DataProtection__Keys__0__Id: 'x', DataProtection__Keys__0__Key: 'c2hvcnQ=' },
        argv: [],
      }),
    ).toThrow(/DataProtection:Keys:0:Key: must be base64 of exactly 32 bytes/);
  });

  test('the embedded default generates a key once, readable by its owner only, and keeps using it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'ips-keys-'));
    const lines: string[] = [];
    const first = withEmbeddedKey(loadConfig({ base: {}, env: {}, argv: [] }), dir, (l) => lines.push(l));
    const second = withEmbeddedKey(loadConfig({ base: {}, env: {}, argv: [] }), dir, (l) => lines.push(l));
    expect(keyRingFromConfig(first)!.primary.key).toEqual(keyRingFromConfig(second)!.primary.key);
    expect(statSync(join(dir, KEY_FILE)).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(join(dir, KEY_FILE), 'utf8'))).toHaveLength(1);
    expect(lines[0]).toMatch(/^data-protection: generated a key into .*data-protection-keys\.json/);
    expect(lines[1]).toMatch(/^data-protection: using the generated key in /);
  });
});
