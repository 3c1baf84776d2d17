import { execFileSync } from 'node:child_process';
import { createHash, generateKeyPairSync, randomUUID, X509Certificate, type JsonWebKey } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  createLocalJWKSet,
  decodeProtectedHeader,
  importJWK,
  importX509,
  jwtVerify,
  SignJWT,
  type JSONWebKeySet,
} from 'jose';
import * as oidc from 'openid-client';
import { createUserWith, eventually, UNLIMITED_SIGN_IN, useHarness } from '../support/harness';
import { codeFlow } from '../support/code-flow';
import { relyingParty } from '../support/relying-party';
import { textOf, type Visit } from '../support/sign-in-flow';
import { seedApiResource } from '../support/api-resources';
import {
  currentSigningKeys,
  importSigningKey,
  storeSigningKey,
  type SigningJwk,
} from '../../platform/store/signing-keys';
import { createSigningKeyRotationActivities } from '../../sign-in/activities/signing-key-rotation';

// Issue 40 part 2: keys carried over from the source sign from the first request every instance serves after they
// arrive, under their own kid; whatever they signed before cutover still passes: an id_token_hint at endsession (its
// lifetime unchecked, as at Duende) and JWT access tokens at introspection by the API they are for (RSA and EC).
const h = useHarness({
  apps: {},
  ownDatabase: true,
  config: {
    Oidc: { ReloadSeconds: 0 },
    Auth: { ...UNLIMITED_SIGN_IN },
    // IdentityServer's default phases; instances look at the key set every second.
    KeyManagement: { KeyCacheDuration: '00:00:01' },
  },
});

const CALLBACK = 'https://books.example.com/callback';
const PASSWORD = 'correct horse battery 9';
const flow = codeFlow(CALLBACK);
const DAY = 24 * 3600_000;

/** A key of the source's, as the migration stores it: its own kid, its own creation time (30 days ago). */
function sourceKey(kid: string, type: 'rsa' | 'ec'): SigningJwk {
  const { privateKey } =
    type === 'rsa'
      ? generateKeyPairSync('rsa', { modulusLength: 2048 })
      : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { ...privateKey.export({ format: 'jwk' }), kid, alg: type === 'rsa' ? 'RS256' : 'ES256', use: 'sig' };
}
const SOURCE_RSA = sourceKey(`source-rsa-${randomUUID().slice(0, 8)}`, 'rsa');
const SOURCE_EC = sourceKey(`source-ec-${randomUUID().slice(0, 8)}`, 'ec');

const jwks = async () =>
  (await (await fetch(`${h.api.url}/.well-known/openid-configuration/jwks`)).json()) as JSONWebKeySet;
const kids = async () => (await jwks()).keys.map((k) => k.kid);

/** What the source signed before cutover, with its own key: the issuer is the same URL (the host name is kept). */
const signedBySource = async (key: SigningJwk, claims: Record<string, unknown>, typ: string, exp: number) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ })
    .setIssuer(h.api.publicUrl)
    .setIssuedAt(exp - 3600)
    .setExpirationTime(exp)
    .sign(await importJWK(key as JsonWebKey, key.alg));

const now = () => Math.floor(Date.now() / 1000);

/** Endsession accepted the hint as naming the signed-in user: the page signs out without asking (a refusal is 400). */
const signsOutAtOnce = (page: Visit | URL) =>
  !(page instanceof URL) && page.status === 200 && textOf(page).includes('Signing you out');

async function introspect(api: string, token: string): Promise<Record<string, unknown>> {
  const answer = await fetch(`${h.api.url}/connect/introspect`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${api}:${api}-secret-sixteen`).toString('base64')}`,
    },
    body: new URLSearchParams({ token }).toString(),
  });
  expect(answer.status).toBe(200);
  return (await answer.json()) as Record<string, unknown>;
}

beforeAll(async () => {
  // Two API resources with their secrets, as the migration writes ApiResources, ApiScopes and ApiResourceSecrets.
  for (const [api, scope] of [
    ['library-api', 'library.read'],
    ['fees-api', 'fees.read'],
  ])
    await seedApiResource(h.context.db, { id: api, scope, secret: `${api}-secret-sixteen` });
  for (const [clientId, body] of [
    [
      'books',
      {
        AllowedGrantTypes: ['authorization_code'],
        RedirectUris: [CALLBACK],
        PostLogoutRedirectUris: [CALLBACK],
        AllowedScopes: ['openid', 'profile'],
        ClientSecrets: [{ Value: 'books-secret-sixteen' }],
      },
    ],
    [
      'reader',
      {
        AllowedGrantTypes: ['client_credentials'],
        AllowedScopes: ['library.read'],
        ClientSecrets: [{ Value: 'reader-secret-sixteen' }],
      },
    ],
  ] as const) {
    const answer = await h.admin('PUT', `/api/v1/clients/${clientId}`, body);
    if (answer.status !== 201) throw new Error(JSON.stringify(answer.body));
  }
}, 60_000);

test("a migrated key signs under its own kid once every instance has seen it; the source's id tokens end sessions", async () => {
  const reader = await relyingParty(h.api.publicUrl, 'reader', 'reader-secret-sixteen');
  const before = await oidc.clientCredentialsGrant(reader, { scope: 'library.read' });
  const own = decodeProtectedHeader(before.access_token).kid;
  expect(own).toBeDefined();

  const storedAt = Date.now();
  const signedAfter: number[] = [];
  expect(
    await storeSigningKey(h.context.db, h.context.dataProtection!, SOURCE_RSA, {
      origin: 'migrated',
      createdAt: new Date(Date.now() - 30 * DAY),
    }),
  ).toBe(true);
  // Published within a key-cache look, signing within two: older than the service's own key and in its signing phase.
  await eventually(async () => expect(await kids()).toContain(SOURCE_RSA.kid), 5_000);
  const after = await eventually(async () => {
    const token = await oidc.clientCredentialsGrant(reader, { scope: 'library.read' });
    const signedBy = decodeProtectedHeader(token.access_token).kid;
    if (signedBy === SOURCE_RSA.kid) signedAfter.push(Date.now() - storedAt);
    expect(signedBy).toBe(SOURCE_RSA.kid);
    return token;
  }, 10_000);
  // Never before every instance may have seen it: two looks of KeyCacheDuration (1 s) after it was stored.
  expect(Math.min(...signedAfter)).toBeGreaterThanOrEqual(2_000);
  // An API as its team writes it verifies both against the JWKS: the service's own key stays published.
  const keySet = createLocalJWKSet(await jwks());
  for (const token of [before, after])
    await jwtVerify(token.access_token, keySet, { issuer: h.api.publicUrl, audience: 'library-api', typ: 'at+jwt' });
  expect(await kids()).toEqual([SOURCE_RSA.kid, own]);

  // A user's ID token is signed by it too, and ends the session at endsession as id_token_hint. It signs once every
  // instance has looked twice (2 × KeyCacheDuration after it was stored); with discovery and the JWKS answered from
  // the build's copy the steps above can all be done before then.
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, storedAt + 2 * 1000 + 500 - Date.now())));
  const user = await createUserWith(h, 'cutover-keys', PASSWORD);
  const books = await relyingParty(h.api.publicUrl, 'books', 'books-secret-sixteen');
  const started = await flow.start(books, 'openid profile');
  const tokens = await flow.tokens(books, started, await flow.signIn(started, user.email, PASSWORD));
  expect(decodeProtectedHeader(tokens.id_token!).kid).toBe(SOURCE_RSA.kid);
  const endSession = (hint: string) =>
    started.page.open(
      `${h.api.url}/connect/endsession?${new URLSearchParams({ id_token_hint: hint, post_logout_redirect_uri: CALLBACK })}`,
    );
  // A valid hint naming the signed-in user signs out without the question (Duende's ShowSignoutPrompt false).
  expect(signsOutAtOnce(await endSession(tokens.id_token!))).toBe(true);

  // One the source issued a month ago, long expired: accepted, as Duende accepts it (its lifetime is not checked).
  const old = await signedBySource(SOURCE_RSA, { sub: user.id, aud: 'books' }, 'JWT', now() - 29 * 24 * 3600);
  expect(signsOutAtOnce(await endSession(old))).toBe(true);
  // Under the source's kid but signed by another key: refused.
  const forged = await signedBySource(sourceKey(SOURCE_RSA.kid, 'rsa'), { sub: user.id, aud: 'books' }, 'JWT', now());
  const refused = (await endSession(forged)) as Visit;
  expect(refused.status).toBe(400);
  expect(textOf(refused)).toContain('could not validate id_token_hint');
});

test('an API resource introspects JWT access tokens as at Duende: its own scopes only, any published key, RSA or EC', async () => {
  const reader = await relyingParty(h.api.publicUrl, 'reader', 'reader-secret-sixteen');
  const token = await oidc.clientCredentialsGrant(reader, { scope: 'library.read' });
  const seen = await introspect('library-api', token.access_token);
  expect(seen).toMatchObject({ active: true, client_id: 'reader', iss: h.api.publicUrl, scope: 'library.read' });
  expect(seen.exp).toEqual(expect.any(Number));
  // An API none of whose scopes the token carries reads it as inactive, as at Duende.
  expect(await introspect('fees-api', token.access_token)).toEqual({ active: false });

  // The source's EC key: published, and what it signed before cutover passes at the API and at introspection.
  await storeSigningKey(h.context.db, h.context.dataProtection!, SOURCE_EC, {
    origin: 'migrated',
    createdAt: new Date(Date.now() - 20 * DAY),
  });
  await eventually(async () => expect(await kids()).toContain(SOURCE_EC.kid), 5_000);
  const claims = { client_id: 'legacy-app', aud: 'library-api', scope: ['library.read'], jti: randomUUID() };
  const fromSource = await signedBySource(SOURCE_EC, claims, 'at+jwt', now() + 600);
  const verified = await jwtVerify(fromSource, createLocalJWKSet(await jwks()), { audience: 'library-api' });
  expect(verified.protectedHeader.alg).toBe('ES256');
  expect(await introspect('library-api', fromSource)).toMatchObject({
    active: true,
    client_id: 'legacy-app',
    aud: 'library-api',
    scope: 'library.read',
  });

  // An ID token the source signed with it ends a session too, though the client's ID tokens are RS256 here.
  const user = await createUserWith(h, 'cutover-ec', PASSWORD);
  const books = await relyingParty(h.api.publicUrl, 'books', 'books-secret-sixteen');
  const started = await flow.start(books, 'openid');
  await flow.tokens(books, started, await flow.signIn(started, user.email, PASSWORD));
  const hint = await signedBySource(SOURCE_EC, { sub: user.id, aud: 'books' }, 'JWT', now() - 3600);
  const signOut = await started.page.open(
    `${h.api.url}/connect/endsession?${new URLSearchParams({ id_token_hint: hint, post_logout_redirect_uri: CALLBACK })}`,
  );
  expect(signsOutAtOnce(signOut)).toBe(true);

  // Expired, tampered, or signed by a key that is not published: inactive, never an error.
  const expired = await signedBySource(SOURCE_EC, claims, 'at+jwt', now() - 10);
  expect(await introspect('library-api', expired)).toEqual({ active: false });
  const [head, , signature] = fromSource.split('.');
  const widened = Buffer.from(JSON.stringify({ ...claims, scope: ['library.read', 'fees.read'] })).toString(
    'base64url',
  );
  expect(await introspect('fees-api', `${head}.${widened}.${signature}`)).toEqual({ active: false });
  const stranger = await signedBySource(sourceKey('unknown-kid', 'ec'), claims, 'at+jwt', now() + 600);
  expect(await introspect('library-api', stranger)).toEqual({ active: false });

  // Revoked by the client it was issued to: inactive from then on.
  await oidc.tokenRevocation(reader, token.access_token);
  expect(await introspect('library-api', token.access_token)).toEqual({ active: false });
});

test('KeyManagement:Enabled false takes the keys as stored: a key past its retention stays published, rotation leaves it', async () => {
  const settings = { ...h.config.KeyManagement, Enabled: false };
  const ancient = sourceKey(`source-ancient-${randomUUID().slice(0, 8)}`, 'rsa');
  await storeSigningKey(h.context.db, h.context.dataProtection!, ancient, {
    origin: 'migrated',
    createdAt: new Date(Date.now() - 400 * DAY),
  });
  const rotation = createSigningKeyRotationActivities({ ...h.context, keyManagement: settings });
  expect(await rotation.rotateSigningKeys()).toEqual({ deleted: [], nextInMs: 24 * 3600_000 });
  const asStored = await currentSigningKeys(h.context.db, h.context.dataProtection!, settings);
  expect(asStored.published.map((k) => k.kid)).toContain(ancient.kid);
  // With rotation on, the same key is retired: out of the published keys.
  const managed = await currentSigningKeys(h.context.db, h.context.dataProtection!, h.config.KeyManagement);
  expect(managed.published.map((k) => k.kid)).not.toContain(ancient.kid);
  await h.context.db.deleteFrom('signing_keys').where('id', '=', ancient.kid).execute();
});

// A key that came with a certificate (a PFX of AddSigningCredential, Duende's X509KeyContainer) is published as
// IdentityServer publishes an X509SecurityKey: `x5c` and `x5t` beside `n` and `e`, so an API that takes the key from
// the certificate finds it after cutover. A static key signs (it wins over managed keys): the service's own tokens
// verify against that certificate. Last in the file: the key is removed at the end.
test('a certificate key is published with its x5c and x5t, and what it signs verifies against the certificate', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'cutover-pfx-'));
  try {
    const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
    openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'k.pem', '-out', 'c.pem', '-subj', '/CN=IS');
    openssl('pkcs12', '-export', '-inkey', 'k.pem', '-in', 'c.pem', '-out', 'k.pfx', '-passout', 'pass:');
    const certificate = new X509Certificate(readFileSync(join(dir, 'c.pem')));
    const { kid, imported } = await importSigningKey(
      h.context.db,
      h.context.dataProtection!,
      readFileSync(join(dir, 'k.pfx')),
    );
    expect(imported).toBe(true);
    try {
      await eventually(async () => expect(await kids()).toContain(kid), 5_000);
      const published = (await jwks()).keys.find((k) => k.kid === kid)!;
      expect(published).toMatchObject({
        kty: 'RSA',
        use: 'sig',
        alg: 'RS256',
        x5t: createHash('sha1').update(certificate.raw).digest('base64url'),
        x5c: [certificate.raw.toString('base64')],
      });
      // Keys without a certificate have neither.
      expect((await jwks()).keys.find((k) => k.kid === SOURCE_RSA.kid)).not.toHaveProperty('x5c');

      // It signs once every instance has seen it (two looks at the key set, as for a migrated key).
      const reader = await relyingParty(h.api.publicUrl, 'reader', 'reader-secret-sixteen');
      let accessToken = '';
      await eventually(async () => {
        accessToken = (await oidc.clientCredentialsGrant(reader, { scope: 'library.read' })).access_token;
        expect(decodeProtectedHeader(accessToken).kid).toBe(kid);
      }, 10_000);
      const fromCertificate = await importX509(certificate.toString(), 'RS256');
      await expect(jwtVerify(accessToken, fromCertificate)).resolves.toMatchObject({
        payload: { client_id: 'reader' },
      });
    } finally {
      await h.context.db.deleteFrom('signing_keys').where('id', '=', kid).execute();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}, 60_000);
