import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { sql } from 'kysely';
import { Client as PgClient } from 'pg';
import type { MigrationOptions } from '../../migration/activities/types';
import type { MigrationReport } from '../../migration/workflows/migration';
import { connectSource } from '../../migration/source/connection';
import { loadSourceKeyRing } from '../../migration/source/data-protection-keys';
import { NOT_CARRIED as NOT_CARRIED_REASONS, openStockRefreshToken } from '../../migration/source/stock-refresh-tokens';
import { refreshTokensPass } from '../../migration/activities/passes/refresh-tokens';
import { keyXml } from '../../platform/security/aspnet-data-protection';
import { persistedGrantKeys } from '../../platform/security/persisted-grant-keys';
import { readKeptSourceKeyRing } from '../../platform/store/source-key-ring';
import { useHarness } from '../support/harness';
import { relyingParty } from '../support/relying-party';
import { testMigrationOptions, useGeneratedSource } from '../support/scratch-store';
import { migrateCompletely, passOf } from '../support/migration-runs';
import {
  grantLifetime,
  harnessOverProtectedSource,
  keyRingFolder,
  newSourceKey,
  protectedGrantData,
  SOURCE_APPLICATION_NAME,
} from '../support/source-protection';

// Refresh tokens a stock Duende IdentityServer issued (issue "Cutover without a forced re-login", items 1, 2 and 4):
// PersistedGrants rows made to the published format (hashed keys, PersistentGrantSerializer's envelope, a payload
// protected by ASP.NET Core Data Protection under the application's name) are carried over by the migration and
// redeemed by the handle the client holds, with openid-client as the client.
const APPLICATION_NAME = SOURCE_APPLICATION_NAME;
const ringKey = newSourceKey();
const strangerKey = newSourceKey();
const keyRingPath = keyRingFolder(ringKey);
/** A second key of the ring whose master key the source encrypted with DPAPI: it cannot open anything here. */
const dpapiKey = newSourceKey();
writeFileSync(
  join(keyRingPath, `key-${dpapiKey.id}.xml`),
  keyXml({ ...dpapiKey, created: new Date(), expires: new Date(Date.now() + 86_400_000) }).replace(
    /<value>[^<]+<\/value>/,
    '<encryptedSecret decryptorType="Microsoft.AspNetCore.DataProtection.XmlEncryption.DpapiXmlDecryptor, Microsoft.AspNetCore.DataProtection" xmlns="http://schemas.asp.net/2015/03/dataProtection"><encryptedKey><value>AQAAANCMnd8B</value></encryptedKey></encryptedSecret>',
  ),
);

const source = useGeneratedSource(10);
const h = useHarness(() => harnessOverProtectedSource(source().url, keyRingPath));

const userId = (n: number) => `user-${String(n).padStart(8, '0')}`;
const SCOPES = ['openid', 'profile', 'orders.read', 'offline_access'];
const authTime = Math.floor(Date.now() / 1000) - 3600;

/** Duende IdentityServer 6/7's RefreshToken (Version 5), as its PersistentGrantSerializer writes it. */
const refreshTokenV5 = (n: number) =>
  JSON.stringify({
    ...grantLifetime(),
    AccessTokens: {},
    Subject: {
      AuthenticationType: 'Identity.Application',
      Claims: [
        { Type: 'sub', Value: userId(n) },
        { Type: 'auth_time', Value: String(authTime), ValueType: 'http://www.w3.org/2001/XMLSchema#integer64' },
        { Type: 'idp', Value: 'local' },
        { Type: 'amr', Value: 'pwd' },
      ],
    },
    Version: 5,
    ClientId: 'web',
    SessionId: 'B0C1D2E3F4',
    Description: null,
    AuthorizedScopes: SCOPES,
    AuthorizedResourceIndicators: null,
    ProofType: 0,
  });

/** IdentityServer4's and Duende 5's RefreshToken (Version 4): the claims live in the access token it came with. */
const refreshTokenV4 = (n: number) =>
  JSON.stringify({
    ...grantLifetime(),
    AccessToken: {
      Audiences: ['orders-api'],
      Issuer: 'https://identity.example.com',
      CreationTime: new Date().toISOString(),
      Lifetime: 3600,
      Type: 'access_token',
      ClientId: 'web',
      AccessTokenType: 0,
      Claims: [
        { Type: 'client_id', Value: 'web' },
        ...SCOPES.map((scope) => ({ Type: 'scope', Value: scope })),
        { Type: 'sub', Value: userId(n) },
        { Type: 'auth_time', Value: String(authTime) },
        { Type: 'amr', Value: 'pwd' },
      ],
      Version: 4,
    },
    Version: 4,
  });

const protectedData = (json: string, key = ringKey, purposes?: string[]) => protectedGrantData(json, key, purposes);

/** Today's handles: 32 random bytes as upper-case hex with the `-1` suffix; older ones are base64. */
const HANDLE_V6 = `${randomBytes(32).toString('hex').toUpperCase()}-1`;
const HANDLE_OLD = randomBytes(32).toString('base64');

const future = new Date(Date.now() + 30 * 86_400_000);
const past = new Date(Date.now() - 86_400_000);
/** The source's refresh tokens: two live ones to carry over, and one of each kind the report must explain. */
const GRANTS: Array<{ key: string; subject: number; data: string; expiration?: Date; consumed?: boolean }> = [
  { key: persistedGrantKeys(HANDLE_V6)[0], subject: 3, data: protectedData(refreshTokenV5(3)) },
  { key: persistedGrantKeys(HANDLE_OLD)[0], subject: 4, data: protectedData(refreshTokenV4(4)) },
  { key: 'expired', subject: 5, data: protectedData(refreshTokenV5(5)), expiration: past },
  { key: 'consumed', subject: 6, data: protectedData(refreshTokenV5(6)), consumed: true },
  {
    key: 'other-app',
    subject: 7,
    data: protectedData(refreshTokenV5(7), ringKey, ['/other/app', 'PersistentGrantSerializer']),
  },
  { key: 'stranger-key', subject: 8, data: protectedData(refreshTokenV5(8), strangerKey) },
  { key: 'version-3', subject: 9, data: protectedData(JSON.stringify({ Version: 3, ClientId: 'web' })) },
];

const migrate = (overrides: Partial<MigrationOptions>) => migrateCompletely(h, overrides);
const jwks = () => createRemoteJWKSet(new URL(`${h.api.publicUrl}/.well-known/openid-configuration/jwks`));
const refreshPass = (report: MigrationReport) => passOf(report, 'refresh-tokens');

/** Writes these refresh tokens of `clientId` into the source's PersistedGrants, as IdentityServer stores them. */
async function issueAtSource(grants: typeof GRANTS, clientId = 'web', replace = false) {
  const pg = new PgClient({ connectionString: source().url });
  await pg.connect();
  try {
    if (replace) await pg.query('delete from "PersistedGrants"');
    for (const grant of grants)
      await pg.query(
        `insert into "PersistedGrants" ("Key","Type","SubjectId","SessionId","ClientId","CreationTime","Expiration","ConsumedTime","Data")
         values ($1, 'refresh_token', $2, 'B0C1D2E3F4', $3, now(), $4, $5, $6)`,
        [
          grant.key,
          userId(grant.subject),
          clientId,
          grant.expiration ?? future,
          grant.consumed ? new Date() : null,
          grant.data,
        ],
      );
  } finally {
    await pg.end();
  }
}

beforeAll(async () => {
  await issueAtSource(GRANTS, 'web', true);
  await migrate({ version: 'stock-1', migrateClients: true });
}, 120_000);

const NOT_CARRIED = {
  expired: 1,
  consumed: 1,
  'wrong application name (the payload does not open for it)': 1,
  'missing key (the key that protected it is not in the key ring)': 1,
  'unknown payload version': 1,
};

test('a dry run says how many refresh tokens would carry over and why the others would not, and keeps nothing', async () => {
  const report = await migrate({ version: 'stock-dry', dryRun: true, migrateRefreshTokens: true });
  expect(refreshPass(report).refreshTokens).toEqual({ carriedOver: 2, notCarried: NOT_CARRIED });
  expect(refreshPass(report).warnings).toEqual([
    expect.stringMatching(new RegExp(`^source Data Protection key ${dpapiKey.id} .*DpapiXmlDecryptor`)),
  ]);
  expect(await h.context.db.selectFrom('grants').select('key').execute()).toEqual([]);
});

test('the migration carries the live tokens over sealed under the service ring; a client redeems each by its handle', async () => {
  const report = await migrate({ version: 'stock-2', migrateRefreshTokens: true });
  expect(refreshPass(report).refreshTokens).toEqual({ carriedOver: 2, notCarried: NOT_CARRIED });
  const kept = await h.context.db.selectFrom('grants').selectAll().orderBy('subject_id').execute();
  expect(kept.map((g) => [g.subject_id, g.key_hashed, g.data_sealed])).toEqual([
    [userId(3), true, true],
    [userId(4), true, true],
  ]);
  // Nothing of the token's data is kept in the clear, and the source's handle is not kept at all.
  expect(kept.map((g) => g.data).join()).not.toMatch(/orders\.read|user-0/);
  expect(kept.map((g) => g.key)).not.toContain(HANDLE_V6);

  const rp = await relyingParty(h.api.publicUrl, 'web', 'web-secret');
  for (const [handle, n] of [
    [HANDLE_V6, 3],
    [HANDLE_OLD, 4],
  ] as const) {
    const tokens = await oidc.refreshTokenGrant(rp, handle);
    expect(tokens.claims()).toMatchObject({ sub: userId(n), aud: 'web', auth_time: authTime });
    // The access token is for the API of the token's scopes, as it was at IdentityServer.
    const access = await jwtVerify(tokens.access_token, jwks(), { issuer: h.api.publicUrl, audience: 'orders-api' });
    expect(access.payload).toMatchObject({ sub: userId(n), client_id: 'web', scope: ['orders.read'] });
    // The web client's RefreshTokenUsage is OneTimeOnly: the source's handle is rotated, and used once only.
    expect(tokens.refresh_token).not.toBe(handle);
    await oidc.refreshTokenGrant(rp, tokens.refresh_token!);
    await expect(oidc.refreshTokenGrant(rp, handle)).rejects.toMatchObject({ error: 'invalid_grant' });
  }
});

test("a client with RefreshTokenUsage ReUse (0) keeps redeeming the source's handle", async () => {
  await h.context.db
    .updateTable('clients')
    .set({ settings: sql`settings || '{"RefreshTokenUsage": 0}'::jsonb` })
    .where('client_id', '=', 'mobile')
    .execute();
  const handle = `${randomBytes(32).toString('hex').toUpperCase()}-1`;
  await issueAtSource(
    [{ key: persistedGrantKeys(handle)[0], subject: 2, data: protectedData(refreshTokenV5(2)) }],
    'mobile',
  );
  const report = await migrate({ version: 'stock-reuse', migrateRefreshTokens: true });
  expect(refreshPass(report).refreshTokens?.carriedOver).toBe(1);
  const rp = await relyingParty(h.api.publicUrl, 'mobile', 'mobile-secret');
  for (let use = 0; use < 3; use++) {
    const tokens = await oidc.refreshTokenGrant(rp, handle);
    expect(tokens.claims()).toMatchObject({ sub: userId(2), aud: 'mobile' });
    expect(tokens.refresh_token ?? handle).toBe(handle);
  }
});

test('a key ring that cannot be read is said once and counted against each token, and the run goes on', async () => {
  const db = connectSource(source().url).db;
  try {
    const page = await refreshTokensPass(
      {
        source: db,
        target: h.context.db,
        options: testMigrationOptions({ dryRun: true, migrateRefreshTokens: true }),
        sourceDataProtection: { ApplicationName: APPLICATION_NAME, KeyRingPath: join(keyRingPath, 'no-such-folder') },
      },
      null,
      null,
    );
    expect(page.warnings).toEqual([expect.stringMatching(/key ring could not be read: .*ENOENT/)]);
    expect(page.refreshTokens?.notCarried).toMatchObject({ [NOT_CARRIED_REASONS.noKeyRing]: expect.any(Number) });
  } finally {
    await db.destroy();
  }
});

test('the stored hash presented as a handle redeems nothing', async () => {
  const rp = await relyingParty(h.api.publicUrl, 'web', 'web-secret');
  for (const key of [...persistedGrantKeys(HANDLE_V6), ...persistedGrantKeys(HANDLE_OLD)])
    await expect(oidc.refreshTokenGrant(rp, key)).rejects.toMatchObject({ error: 'invalid_grant' });
});

test("without KeyRingPath, the key ring comes from the source's DataProtectionKeys table (EF Core's store)", async () => {
  const db = connectSource(source().url).db;
  try {
    await db
      .insertInto('DataProtectionKeys')
      .values({
        FriendlyName: `key-${ringKey.id}`,
        Xml: keyXml({ ...ringKey, created: past, expires: future }),
      })
      .execute();
    const loaded = await loadSourceKeyRing(db, {});
    expect(loaded?.from).toMatch(/DataProtectionKeys/);
    const row = {
      SubjectId: userId(3),
      SessionId: null,
      ClientId: 'web',
      CreationTime: new Date(),
      Expiration: future,
      ConsumedTime: null,
      Data: protectedData(refreshTokenV5(3)),
    };
    expect(openStockRefreshToken(row, { ring: loaded?.ring, applicationName: APPLICATION_NAME }, new Date())).toEqual({
      carried: true,
      subjectId: userId(3),
      expiration: future,
      data: { scope: SCOPES.join(' '), authTime, amr: ['pwd'] },
    });
    // The same token without the application name, or with another, is named for what is missing.
    expect(openStockRefreshToken(row, { ring: loaded?.ring }, new Date())).toMatchObject({
      reason: expect.stringMatching(/^no application name/),
    });
  } finally {
    await db.destroy();
  }
});

test("a real run keeps the source's key ring sealed in the store, and each user's security stamp", async () => {
  const kept = await h.context.db.selectFrom('source_key_ring').select(['name', 'sealed_xml']).execute();
  const files = readdirSync(keyRingPath).filter((f) => f.endsWith('.xml'));
  expect(kept.map((k) => k.name).sort()).toEqual(files.sort());
  // No master key in the clear: the documents open only with the service's ring.
  expect(kept.map((k) => k.sealed_xml).join()).not.toContain(ringKey.masterKey.toString('base64'));
  const opened = await readKeptSourceKeyRing(h.context.db, h.context.dataProtection!);
  expect(opened.map((d) => d.xml)).toEqual(opened.map((d) => readFileSync(join(keyRingPath, d.name), 'utf8')));

  const db = connectSource(source().url).db;
  try {
    const stamps = await db.selectFrom('AspNetUsers').select(['Id', 'SecurityStamp']).execute();
    const here = await h.context.db
      .selectFrom('users')
      .select(['id', 'security_stamp'])
      .where(
        'id',
        'in',
        stamps.map((s) => s.Id),
      )
      .execute();
    expect(here.length).toBeGreaterThan(0);
    const bySource = new Map(stamps.map((s) => [s.Id, s.SecurityStamp]));
    for (const user of here) expect(user.security_stamp).toBe(bySource.get(user.id));
    // The generated users have stamps (md5 of their number); the odd ones, as some real rows, have none.
    expect(here.filter((u) => u.security_stamp).length).toBeGreaterThan(0);
  } finally {
    await db.destroy();
  }
});
