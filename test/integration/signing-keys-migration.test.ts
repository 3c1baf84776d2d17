import { execFileSync } from 'node:child_process';
import {
  createHash,
  createPrivateKey,
  generateKeyPairSync,
  randomBytes,
  X509Certificate,
  type JsonWebKey,
  type KeyObject,
} from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { importJWK, jwtVerify, SignJWT } from 'jose';
import { Client as PgClient } from 'pg';
import { protect } from '../../platform/security/aspnet-data-protection';
import type { MigrationReport } from '../../migration/workflows/migration';
import { logEntries } from '../support/captured-log';
import { useHarness } from '../support/harness';
import { codecOf, historyText } from '../support/history';
import { migrateCompletely, passOf } from '../support/migration-runs';
import { useGeneratedSource } from '../support/scratch-store';
import { keyRingFolder, newSourceKey, SOURCE_APPLICATION_NAME } from '../support/source-protection';

// Issue 40, item 1: a Duende IdentityServer's automatic signing keys (its Keys table and a FileSystemKeyStore folder),
// made here to the published formats (Duende's SerializedKey, KeySerializer's JSON of RsaKeyContainer, EcKeyContainer
// and X509KeyContainer, Data Protection with the purpose DataProtectionKeyProtector), are carried over: a token the
// source signed verifies against the key the service stores under the same kid, with jose as the API.
const DAY = 86_400_000;
const ringKey = newSourceKey();
const keyRingPath = keyRingFolder(ringKey);
const PURPOSES = [SOURCE_APPLICATION_NAME, 'DataProtectionKeyProtector'];
/** Duende's kids: CryptoHelper.CreateUniqueId, 16 random bytes as upper-case hex. */
const newKid = () => randomBytes(16).toString('hex').toUpperCase();

/** A JWK's base64url integer as .NET's RSAParameters/ECParameters export it: base64, left-padded to `bytes`. */
const dotnetBytes = (b64url: string, bytes: number) => {
  const raw = Buffer.from(b64url, 'base64url');
  return Buffer.concat([Buffer.alloc(Math.max(0, bytes - raw.length)), raw]).toString('base64');
};

function rsaContainer(key: KeyObject) {
  const j = key.export({ format: 'jwk' });
  const size = Buffer.from(j.n!, 'base64url').length;
  return {
    Parameters: {
      D: dotnetBytes(j.d!, size),
      DP: dotnetBytes(j.dp!, size / 2),
      DQ: dotnetBytes(j.dq!, size / 2),
      Exponent: dotnetBytes(j.e!, 3),
      InverseQ: dotnetBytes(j.qi!, size / 2),
      Modulus: dotnetBytes(j.n!, size),
      P: dotnetBytes(j.p!, size / 2),
      Q: dotnetBytes(j.q!, size / 2),
    },
  };
}

function ecContainer(key: KeyObject) {
  const j = key.export({ format: 'jwk' });
  const size = Buffer.from(j.x!, 'base64url').length;
  return { D: dotnetBytes(j.d!, size), Q: { X: dotnetBytes(j.x!, size), Y: dotnetBytes(j.y!, size) } };
}

interface SourceKey {
  kid: string;
  alg: string;
  created: Date;
  /** The private key, for signing as the source did; absent where there is none. */
  privateKey?: KeyObject;
  x509?: boolean;
  container: Record<string, unknown>;
  dataProtected: boolean;
  /** Protected for these purposes instead of the source's own (another application). */
  purposes?: string[];
  /** Protected with a Data Protection key the source's ring does not hold. */
  ring?: typeof ringKey;
  tamper?: boolean;
}

/** The key's `Data`: KeySerializer's JSON of its container, protected as DataProtectionKeyProtector.Protect does. */
function dataOf(key: SourceKey): string {
  const json = JSON.stringify({
    ...key.container,
    Id: key.kid,
    Algorithm: key.alg,
    HasX509Certificate: key.x509 ?? false,
    Created: key.created.toISOString(),
  });
  if (!key.dataProtected) return json;
  const data = protect(key.ring ?? ringKey, key.purposes ?? PURPOSES, Buffer.from(json)).toString('base64url');
  if (!key.tamper) return data;
  const at = Math.floor(data.length / 2);
  return `${data.slice(0, at)}${data[at] === 'A' ? 'B' : 'A'}${data.slice(at + 1)}`;
}

/** A real PFX, as X509Certificate2.Export(Pfx) gives it: no password, 3DES and SHA-1 (made with openssl). */
function pfxOf(withKey: boolean): { pfx: Buffer; privateKey: KeyObject; certificate: X509Certificate } {
  const dir = mkdtempSync(join(tmpdir(), 'source-pfx-'));
  const run = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  run(
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'k.pem', '-out', 'c.pem', '-days', '90'].concat([
      '-subj',
      '/CN=OP',
    ]),
  );
  run(
    [
      'pkcs12',
      '-export',
      '-in',
      'c.pem',
      '-out',
      'k.pfx',
      '-passout',
      'pass:',
      '-macalg',
      'sha1',
      '-iter',
      '2000',
    ].concat(withKey ? ['-inkey', 'k.pem', '-keypbe', 'PBE-SHA1-3DES', '-certpbe', 'PBE-SHA1-3DES'] : ['-nokeys']),
  );
  return {
    pfx: readFileSync(join(dir, 'k.pfx')),
    privateKey: createPrivateKey(readFileSync(join(dir, 'k.pem'))),
    certificate: new X509Certificate(readFileSync(join(dir, 'c.pem'))),
  };
}

const rsa = () => generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
const ec = (namedCurve: string) => generateKeyPairSync('ec', { namedCurve }).privateKey;
const ago = (days: number) => new Date(Date.now() - days * DAY);

function keyOf(alg: string, privateKey: KeyObject, created: Date, rest: Partial<SourceKey> = {}): SourceKey {
  const container = alg.startsWith('E') ? ecContainer(privateKey) : rsaContainer(privateKey);
  return { kid: newKid(), alg, created, privateKey, container, dataProtected: true, ...rest };
}

const certificate = pfxOf(true);
const ROWS = {
  rsa: keyOf('RS256', rsa(), ago(10)),
  ec: keyOf('ES256', ec('P-256'), ago(20)),
  x509: {
    ...keyOf('RS256', certificate.privateKey, ago(30)),
    x509: true,
    container: { CertificateRawData: certificate.pfx.toString('base64') },
  },
  retired: keyOf('RS256', rsa(), ago(200)),
  tampered: keyOf('RS256', rsa(), ago(5), { tamper: true }),
  otherApp: keyOf('RS256', rsa(), ago(5), { purposes: ['/other/app', 'DataProtectionKeyProtector'] }),
  otherRing: keyOf('ES256', ec('P-256'), ago(5), { ring: newSourceKey() }),
  noPrivateKey: {
    ...keyOf('RS256', rsa(), ago(5)),
    x509: true,
    privateKey: undefined,
    container: { CertificateRawData: pfxOf(false).pfx.toString('base64') },
  },
  unknownAlgorithm: keyOf('RS256', rsa(), ago(5), { alg: 'HS256' }),
} satisfies Record<string, SourceKey>;
const FILES = {
  ps256: keyOf('PS256', rsa(), ago(3)),
  es384Clear: keyOf('ES384', ec('P-384'), ago(4), { dataProtected: false }),
} satisfies Record<string, SourceKey>;
const IMPORTED = [ROWS.rsa, ROWS.ec, ROWS.x509, FILES.ps256, FILES.es384Clear];

/** SerializedKey as FileSystemKeyStore writes it: KeySerializer's JSON, UTF-8 with a BOM (Encoding.UTF8). */
const serializedKeyFile = (key: SourceKey) =>
  `\uFEFF${JSON.stringify({
    Version: 1,
    Id: key.kid,
    Created: key.created.toISOString(),
    Algorithm: key.alg,
    IsX509Certificate: key.x509 ?? false,
    Data: dataOf(key),
    DataProtected: key.dataProtected,
  })}`;

const keyPath = mkdtempSync(join(tmpdir(), 'source-signing-keys-'));
for (const key of Object.values(FILES))
  writeFileSync(join(keyPath, `is-signing-key-${key.kid}.json`), serializedKeyFile(key));
writeFileSync(join(keyPath, 'is-signing-key-broken.json'), '\uFEFF{"Version":1,"Id":');
// Not a key file of FileSystemKeyStore's: not read.
writeFileSync(join(keyPath, 'README.txt'), 'keys');

const source = useGeneratedSource(2, async (pg: PgClient) => {
  for (const key of Object.values(ROWS))
    await pg.query(
      `insert into "Keys" ("Id","Version","Created","Use","Algorithm","IsX509Certificate","DataProtected","Data")
       values ($1, 1, $2, 'signing', $3, $4, $5, $6)`,
      [key.kid, key.created, key.alg, key.x509 ?? false, key.dataProtected, dataOf(key)],
    );
  // Another use of the table (Duende's server-side session keys are not signing keys): not read.
  await pg.query(
    `insert into "Keys" values ('session-key', 1, now(), 'ServerSideSessions', 'RS256', false, false, '{}')`,
  );
});
const h = useHarness(() => ({
  apps: {},
  migrationSource: source().url,
  config: {
    Migration: {
      MigrateClients: false,
      SourceDataProtection: { ApplicationName: SOURCE_APPLICATION_NAME, KeyRingPath: keyRingPath },
      SourceSigningKeys: { KeyPath: keyPath },
    },
  },
}));

const signingKeys = (report: MigrationReport) => passOf(report, 'signing-keys').signingKeys;
const NOT_IMPORTED = {
  'does not open (another application name, or the data was changed)': 2,
  'missing key (the key that protected it is not in the key ring)': 1,
  'certificate without a private key': 1,
  'unknown key container (an algorithm IdentityServer does not sign with)': 1,
  'unreadable (not a serialized key, or a container of another shape)': 1,
};
const storedRows = (kids: string[]) =>
  h.context.db.selectFrom('signing_keys').selectAll().where('id', 'in', kids).orderBy('created_at').execute();

test('a dry run says which keys would be imported, which are retired and why the others would not, and writes none', async () => {
  const report = await migrateCompletely(h, { version: 'keys-dry', dryRun: true });
  expect(signingKeys(report)).toEqual({ imported: 5, alreadyStored: 0, retired: 1, notImported: NOT_IMPORTED });
  // Its counts are the real run's (the next test's): created is what it would import.
  expect(passOf(report, 'signing-keys')).toMatchObject({ read: 12, created: 5, skipped: 7 });
  expect(passOf(report, 'signing-keys').warnings).toEqual(
    expect.arrayContaining([
      `signing key ${ROWS.tampered.kid} (Keys table) was not imported: does not open (another application name, or the data was changed)`,
      expect.stringMatching(/^is-signing-key-broken\.json: not a serialized key$/),
    ]),
  );
  expect(await storedRows(Object.values({ ...ROWS, ...FILES }).map((k) => k.kid))).toEqual([]);
});

test('the run stores each key under its kid and creation time, sealed; a token the source signed verifies against it', async () => {
  const report = await migrateCompletely(h, { version: 'keys-1' });
  expect(signingKeys(report)).toEqual({ imported: 5, alreadyStored: 0, retired: 1, notImported: NOT_IMPORTED });
  expect(passOf(report, 'signing-keys')).toMatchObject({ read: 12, created: 5, skipped: 7 });
  const rows = await storedRows(Object.values({ ...ROWS, ...FILES }).map((k) => k.kid));
  expect(rows.map((r) => [r.id, r.algorithm, r.origin, r.created_at.toISOString()])).toEqual(
    [...IMPORTED]
      .sort((a, b) => a.created.getTime() - b.created.getTime())
      .map((k) => [k.kid, k.alg, 'migrated', k.created.toISOString()]),
  );
  for (const key of IMPORTED) {
    const row = rows.find((r) => r.id === key.kid)!;
    const d = key.privateKey!.export({ format: 'jwk' }).d!;
    // The public half only is in the clear; the private key is sealed under the service's ring.
    expect(JSON.stringify(row.jwk)).not.toContain(d);
    expect(row.jwk).not.toHaveProperty('d');
    expect(row.sealed_private).toMatch(/^v2:/);
    expect(row.sealed_private).not.toContain(d);
    // The X509KeyContainer's key is published with its certificate, as IdentityServer publishes it; no other is.
    if (key === ROWS.x509)
      expect(row.jwk).toMatchObject({
        x5t: createHash('sha1').update(certificate.certificate.raw).digest('base64url'),
        x5c: [certificate.certificate.raw.toString('base64')],
      });
    else expect(row.jwk).not.toHaveProperty('x5c');
    const token = await new SignJWT({ sub: 'user-00000001' })
      .setProtectedHeader({ alg: key.alg, kid: key.kid })
      .setIssuedAt()
      .sign(key.privateKey!);
    const publicKey = await importJWK(row.jwk as JsonWebKey, key.alg);
    const verified = await jwtVerify(token, publicKey);
    expect(verified.protectedHeader.kid).toBe(key.kid);
    expect(verified.payload.sub).toBe('user-00000001');
  }
});

test('no key material is in the workflow histories of the run, even with every payload opened, nor in the logs', async () => {
  const secrets = [...IMPORTED, ROWS.retired].flatMap((key) => {
    const jwk = key.privateKey!.export({ format: 'jwk' });
    return [jwk.d!, jwk.p ?? '', dataOf({ ...key, dataProtected: false }).slice(0, 60)].filter(Boolean);
  });
  for (const workflowId of ['migration-keys-1', 'migration-keys-1-signing-keys']) {
    const text = await historyText(h.client, workflowId, codecOf(h.config));
    expect(text).toContain('signing-keys');
    for (const secret of [
      ...secrets,
      certificate.pfx.toString('base64').slice(0, 60),
      rsaContainer(ROWS.rsa.privateKey!).Parameters.D,
    ])
      expect(text).not.toContain(secret);
  }
  const logged = JSON.stringify(logEntries, (_, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
  // The workers logged the pass's warnings (kids and reasons; the first five of a page, in kid order, and the kids are
  // random), and nothing of a key.
  expect(logged).toMatch(/signing key [0-9A-F]{32} \(Keys table\) was not imported: /);
  for (const secret of secrets) expect(logged).not.toContain(secret);
});

test('a second run imports nothing new, and its dry run reports the same', async () => {
  const again = await migrateCompletely(h, { version: 'keys-2' });
  const expected = { imported: 0, alreadyStored: 5, retired: 1, notImported: NOT_IMPORTED };
  expect(signingKeys(again)).toEqual(expected);
  expect(passOf(again, 'signing-keys')).toMatchObject({ created: 0, skipped: 12 });
  const dry = await migrateCompletely(h, { version: 'keys-2-dry', dryRun: true });
  expect(signingKeys(dry)).toEqual(expected);
  expect(passOf(dry, 'signing-keys')).toMatchObject({ created: 0, skipped: 12 });
  expect(await storedRows(IMPORTED.map((k) => k.kid))).toHaveLength(5);
});

test('Migration:MigrateSigningKeys false leaves the keys at the source and says so', async () => {
  const report = await migrateCompletely(h, { version: 'keys-off', dryRun: true, migrateSigningKeys: false });
  expect(signingKeys(report)).toBeUndefined();
  expect(passOf(report, 'signing-keys').warnings).toEqual([expect.stringMatching(/signing keys were not migrated/)]);
});
