import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  NOT_IMPORTED,
  openSerializedKey,
  readKeyFolder,
  type SerializedKey,
} from '../../migration/source/source-signing-keys';

// Source keys whose containers lie about themselves, opened without a database: each is refused by its reason.
const times = {
  RotationInterval: 90 * 86_400_000,
  PropagationTime: 14 * 86_400_000,
  RetentionDuration: 14 * 86_400_000,
  KeyCacheDuration: 5000,
};
const now = new Date();
const b64 = (b64url: string) => Buffer.from(b64url, 'base64url').toString('base64');

function rsaData(key: KeyObject, change: Record<string, string> = {}) {
  const j = key.export({ format: 'jwk' });
  const Parameters = {
    D: b64(j.d!),
    DP: b64(j.dp!),
    DQ: b64(j.dq!),
    Exponent: b64(j.e!),
    InverseQ: b64(j.qi!),
    Modulus: b64(j.n!),
    P: b64(j.p!),
    Q: b64(j.q!),
  };
  return JSON.stringify({ Parameters: { ...Parameters, ...change } });
}
const ecData = (key: KeyObject, publicKeyOf: KeyObject = key) => {
  const j = key.export({ format: 'jwk' });
  const q = publicKeyOf.export({ format: 'jwk' });
  return JSON.stringify({ D: b64(j.d!), Q: { X: b64(q.x!), Y: b64(q.y!) } });
};
const serialized = (Algorithm: string, Data: string, more: Partial<SerializedKey> = {}): SerializedKey => ({
  Id: 'KID1',
  Version: 1,
  Created: now,
  Algorithm,
  IsX509Certificate: false,
  DataProtected: false,
  Data,
  ...more,
});
const open = (key: SerializedKey) => openSerializedKey(key, { applicationName: '/srv/identity-server' }, now, times);

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
const p256 = () => generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;

test('a clear RSA container opens as a PS256 key under its kid and time', () => {
  expect(open(serialized('PS256', rsaData(rsa)))).toEqual({
    opened: true,
    createdAt: now,
    jwk: expect.objectContaining({
      kty: 'RSA',
      kid: 'KID1',
      alg: 'PS256',
      use: 'sig',
      d: rsa.export({ format: 'jwk' }).d,
    }),
  });
});

test('parameters that do not belong together are not a working key', () => {
  const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  expect(open(serialized('RS256', rsaData(rsa, { Modulus: b64(other.n!) })))).toEqual({
    opened: false,
    reason: NOT_IMPORTED.notAKey,
  });
  expect(open(serialized('ES256', ecData(p256(), p256())))).toEqual({ opened: false, reason: NOT_IMPORTED.notAKey });
  // A P-256 point under ES384 (whose curve is P-384).
  expect(open(serialized('ES384', ecData(p256())))).toEqual({ opened: false, reason: NOT_IMPORTED.notAKey });
});

test('a protected key without a key ring, a container of another shape and an algorithm IdentityServer does not sign with', () => {
  expect(open(serialized('RS256', 'CfDJ8', { DataProtected: true }))).toEqual({
    opened: false,
    reason: NOT_IMPORTED.noKeyRing,
  });
  expect(open(serialized('RS256', ecData(p256())))).toEqual({ opened: false, reason: NOT_IMPORTED.unreadable });
  expect(open(serialized('RS1', rsaData(rsa)))).toEqual({
    opened: false,
    reason: NOT_IMPORTED.unsupportedSigningAlgorithm,
  });
  expect(open(serialized('HS256', rsaData(rsa)))).toEqual({ opened: false, reason: NOT_IMPORTED.unknownContainer });
});

test("a key file's Created without an offset is UTC, as a UTC DateTime that lost its Kind; other files are not read", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'key-folder-'));
  const file = {
    Version: 1,
    Id: 'KID2',
    Created: '2026-01-02T03:04:05.1234567',
    Algorithm: 'RS256',
    IsX509Certificate: false,
    Data: '{}',
    DataProtected: false,
  };
  writeFileSync(join(dir, 'is-signing-key-KID2.json'), `\uFEFF${JSON.stringify(file)}`);
  writeFileSync(join(dir, 'signing-key-KID3.json'), JSON.stringify(file));
  expect(await readKeyFolder(dir)).toEqual([
    { file: 'is-signing-key-KID2.json', key: { ...file, Created: new Date('2026-01-02T03:04:05.123Z') } },
  ]);
});
