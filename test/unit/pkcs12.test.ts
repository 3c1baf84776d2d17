import { execFileSync } from 'node:child_process';
import { createPrivateKey, generateKeyPairSync, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readPfx } from '../../platform/security/pkcs12';
import { signingJwk, staticSigningKey, withCertificate } from '../../platform/security/signing-key-material';

// PFX files as OpenSSL writes them in each of the shapes .NET and Windows do, read back with node:crypto alone.
const dir = mkdtempSync(join(tmpdir(), 'pkcs12-'));
const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
openssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'k.pem');
openssl('req', '-x509', '-key', 'k.pem', '-out', 'c.pem', '-subj', '/CN=OP');
const exported = (name: string, ...args: string[]) => {
  openssl('pkcs12', '-export', '-in', 'c.pem', '-out', `${name}.pfx`, ...args);
  return readFileSync(join(dir, `${name}.pfx`));
};
const privateD = createPrivateKey(readFileSync(join(dir, 'k.pem'))).export({ format: 'jwk' }).d;
const certificate = new X509Certificate(readFileSync(join(dir, 'c.pem'))).raw;

test.each([
  ["OpenSSL 3's default: PBES2 with AES-256-CBC and PBKDF2-SHA256, an HMAC-SHA256 check", ['-passout', 'pass:']],
  [
    ".NET's export: 3DES with the PKCS#12 KDF over SHA-1, an HMAC-SHA1 check",
    ['-passout', 'pass:', '-keypbe', 'PBE-SHA1-3DES', '-certpbe', 'PBE-SHA1-3DES', '-macalg', 'sha1'],
  ],
  ['no integrity check at all', ['-passout', 'pass:', '-nomac']],
  ['the key in the clear (a keyBag)', ['-passout', 'pass:', '-keypbe', 'NONE', '-certpbe', 'NONE']],
])('%s: the key and its certificate', (_, args) => {
  const read = readPfx(exported(`v${args.length}`, '-inkey', 'k.pem', ...args));
  expect(read.privateKey.export({ format: 'jwk' }).d).toBe(privateD);
  expect(read.certificate).toEqual(certificate);
});

test('a password opens it; a wrong or missing one is named as such', () => {
  const pfx = exported('password', '-inkey', 'k.pem', '-passout', 'pass:Pfx-Pa55');
  expect(readPfx(pfx, 'Pfx-Pa55').privateKey.export({ format: 'jwk' }).d).toBe(privateD);
  expect(() => readPfx(pfx, 'wrong')).toThrow(expect.objectContaining({ reason: 'wrong-password' }));
  expect(() => readPfx(pfx)).toThrow(expect.objectContaining({ reason: 'wrong-password' }));
});

test('the legacy RC2 certificate encryption hides only the certificate: the key (3DES) is read', () => {
  const read = readPfx(exported('legacy', '-inkey', 'k.pem', '-passout', 'pass:', '-legacy'));
  expect(read.privateKey.export({ format: 'jwk' }).d).toBe(privateD);
  expect(read.certificate).toBeUndefined();
});

test('a certificate without its key, and bytes that are not a PFX, are refused by reason', () => {
  expect(() => readPfx(exported('nokey', '-nokeys', '-passout', 'pass:'))).toThrow(
    expect.objectContaining({ reason: 'no-private-key' }),
  );
  expect(() => readPfx(Buffer.from('not a pfx'))).toThrow(expect.objectContaining({ reason: 'unreadable' }));
  expect(() => readPfx(certificate)).toThrow(expect.objectContaining({ reason: 'unreadable' }));
});

// A key published with its certificate (x5c), as IdentityServer publishes an X509SecurityKey; only its own.
test("a PFX key carries its certificate as x5c; a certificate that is not the key's is not published", () => {
  const withKey = staticSigningKey(exported('signing', '-inkey', 'k.pem', '-passout', 'pass:'));
  expect(withKey).toMatchObject({ alg: 'ES256', x5c: [certificate.toString('base64')] });
  const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
  const jwk = signingJwk(other, 'ES256', 'other');
  expect(withCertificate(jwk, other, certificate)).toBe(jwk);
  expect(withCertificate(jwk, other, Buffer.from('not a certificate'))).toBe(jwk);
});
