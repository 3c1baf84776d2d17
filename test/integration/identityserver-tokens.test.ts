import { sql } from 'kysely';
import { randomUUID } from 'node:crypto';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose';
import * as oidc from 'openid-client';
import { uniqueEmail, useHarness, SIGN_IN_HARNESS } from '../support/harness';
import { codeFlow } from '../support/code-flow';
import { storeCarriedOverGrant } from '../support/carried-grants';
import { relyingParty } from '../support/relying-party';
import { hashClientSecret } from '../../platform/security/client-secrets';
import { enrolTotp } from '../../sign-in/store/mfa';
import { protectSecret } from '../../platform/security/data-protection';
import { browser, GRANT_NOT_ALLOWED, textOf, type Visit } from '../support/sign-in-flow';

// Tokens as Duende IdentityServer writes them (issue "Drop-in for IdentityServer's clients and APIs", items 1 and 3):
// every access token is verified here with jose against the published JWKS, and read by two APIs written as their
// users write them (jose's jwtVerify with their own name as the audience), never with the service's own code.
const h = useHarness(SIGN_IN_HARNESS);

const CALLBACK = 'https://shop.example.com/callback';
const PASSWORD = 'correct horse battery 9';
const flow = codeFlow(CALLBACK);
/** The web shop: a confidential code-flow client of both APIs. */
const SHOP = {
  AllowedGrantTypes: ['authorization_code'],
  RedirectUris: [CALLBACK],
  AllowedScopes: ['openid', 'profile', 'orders.read', 'billing.read'],
  AllowOfflineAccess: true,
  ClientSecrets: [{ Value: 'shop-secret-sixteen!' }],
};

/** An API as its team writes it: the token must be signed by the authority, for this API, and carry its scope. */
async function apiAccepts(api: string, scope: string, token: string): Promise<JWTPayload> {
  const jwks = createRemoteJWKSet(new URL(`${h.api.publicUrl}/.well-known/openid-configuration/jwks`));
  const { payload, protectedHeader } = await jwtVerify(token, jwks, {
    issuer: h.api.publicUrl,
    audience: api,
    typ: 'at+jwt',
  });
  expect(protectedHeader.alg).toBe('RS256');
  expect(payload.scope).toContain(scope);
  return payload;
}

async function putClient(
  clientId: string,
  body: Record<string, unknown>,
  claims?: Array<{ type: string; value: string }>,
) {
  const answer = await h.admin('PUT', `/api/v1/clients/${clientId}`, body);
  if (answer.status !== 200 && answer.status !== 201) throw new Error(JSON.stringify(answer.body));
  // ClientClaims come with clients migrated from IdentityServer.
  if (claims)
    await h.context.db
      .updateTable('clients')
      .set({ claims: JSON.stringify(claims) })
      .where('client_id', '=', clientId)
      .execute();
}

beforeAll(async () => {
  // Two API resources, as the migration writes IdentityServer's ApiResources and ApiScopes.
  for (const [api, scope] of [
    ['orders-api', 'orders.read'],
    ['billing-api', 'billing.read'],
  ]) {
    await h.context.db
      .insertInto('scopes')
      .values({ name: scope, kind: 'api', user_claims: JSON.stringify([]), origin: 'migration' })
      .execute();
    await h.context.db
      .insertInto('clients')
      .values({
        client_id: api,
        client_name: api,
        enabled: true,
        settings: JSON.stringify({ apiResource: true, audience: api }),
        allowed_scopes: JSON.stringify([scope]),
        grant_types: JSON.stringify([]),
        origin: 'migration',
      } as never)
      .execute();
  }
  await putClient('shop', SHOP, [{ type: 'tier', value: 'gold' }]);
  await putClient(
    'backend',
    {
      AllowedGrantTypes: ['client_credentials'],
      AllowedScopes: ['orders.read'],
      ClientSecrets: [{ Value: 'backend-secret-sixteen' }],
    },
    [
      { type: 'tier', value: 'gold' },
      { type: 'region', value: 'eu' },
      { type: 'region', value: 'us' },
    ],
  );
}, 60_000);

async function userTokens(scope: string, extra: Record<string, string> = {}) {
  const email = uniqueEmail('duende-shape');
  const created = await h.admin('POST', '/api/v1/profile/', { email, password: PASSWORD });
  expect(created.status).toBe(201);
  const rp = await relyingParty(h.api.publicUrl, 'shop', 'shop-secret-sixteen!');
  const started = await flow.start(rp, scope, extra);
  const tokens = await flow.tokens(rp, started, await flow.signIn(started, email, PASSWORD));
  return { rp, tokens, userId: created.body.userId as string };
}

test("a user's token for the scopes of two APIs is one token for both, shaped as Duende's, and refreshing keeps it", async () => {
  const { rp, tokens, userId } = await userTokens('openid profile orders.read billing.read offline_access');
  expect(decodeProtectedHeader(tokens.access_token).typ).toBe('at+jwt');
  const orders = await apiAccepts('orders-api', 'orders.read', tokens.access_token);
  const billing = await apiAccepts('billing-api', 'billing.read', tokens.access_token);
  expect(billing).toEqual(orders);
  expect(orders).toMatchObject({
    iss: h.api.publicUrl,
    aud: expect.arrayContaining(['orders-api', 'billing-api']),
    scope: expect.arrayContaining(['orders.read', 'billing.read']),
    client_id: 'shop',
    sub: userId,
    idp: 'local',
    amr: ['pwd'],
    auth_time: expect.any(Number),
    sid: expect.any(String),
    jti: expect.any(String),
    iat: expect.any(Number),
    nbf: expect.any(Number),
    exp: expect.any(Number),
  });
  expect(Array.isArray(orders.scope)).toBe(true);
  // A user's token carries client claims only with AlwaysSendClientClaims.
  expect(orders.client_tier).toBeUndefined();
  const idToken = tokens.claims()!;
  expect(idToken).toMatchObject({ sid: orders.sid, auth_time: orders.auth_time, idp: 'local', amr: ['pwd'] });

  const refreshed = await oidc.refreshTokenGrant(rp, tokens.refresh_token!);
  const again = await apiAccepts('billing-api', 'billing.read', refreshed.access_token);
  expect(again).toMatchObject({ aud: orders.aud, scope: orders.scope, sub: userId, sid: orders.sid });
});

test('the resource parameter still asks for one API', async () => {
  const { tokens } = await userTokens('openid orders.read billing.read', {
    resource: 'urn:identity-service:api:billing-api',
  });
  const billing = await apiAccepts('billing-api', 'billing.read', tokens.access_token);
  expect(billing.aud).toBe('billing-api');
  await expect(apiAccepts('orders-api', 'orders.read', tokens.access_token)).rejects.toThrow(/aud/);
});

test('client claims reach client-credentials tokens with the prefix, and user tokens with AlwaysSendClientClaims', async () => {
  const backend = await relyingParty(h.api.publicUrl, 'backend', 'backend-secret-sixteen');
  const own = await oidc.clientCredentialsGrant(backend, { scope: 'orders.read' });
  const claims = await apiAccepts('orders-api', 'orders.read', own.access_token);
  expect(claims).toMatchObject({
    client_id: 'backend',
    sub: 'backend',
    client_tier: 'gold',
    client_region: ['eu', 'us'],
  });
  expect(claims.idp).toBeUndefined();

  await putClient('shop', { ...SHOP, AlwaysSendClientClaims: true, ClientClaimsPrefix: 'shop_' }, [
    { type: 'tier', value: 'gold' },
    // With an empty prefix such a claim would pass for the service's own: it is never written.
    { type: '', value: 'x' },
  ]);
  const { tokens } = await userTokens('openid orders.read');
  const user = await apiAccepts('orders-api', 'orders.read', tokens.access_token);
  expect(user.shop_tier).toBe('gold');
  expect(user.client_tier).toBeUndefined();

  await putClient('shop', { ...SHOP, AlwaysSendClientClaims: true, ClientClaimsPrefix: '' }, [
    { type: 'sub', value: 'someone-else' },
    { type: 'role', value: 'IdentityAdmin' },
    { type: 'department', value: 'sales' },
  ]);
  const unprefixed = await apiAccepts(
    'orders-api',
    'orders.read',
    (await userTokens('openid orders.read')).tokens.access_token,
  );
  expect(unprefixed.department).toBe('sales');
  expect(unprefixed.role).toBeUndefined();
  expect(unprefixed.sub).not.toBe('someone-else');
});

test('a client names the IdentityServer settings the service will not honour, and GET still writes back with PUT', async () => {
  await putClient('legacy', {
    AllowedGrantTypes: ['authorization_code'],
    RedirectUris: [CALLBACK],
    AllowedScopes: ['openid'],
    ClientSecrets: [{ Value: 'legacy-secret-sixteen' }],
    FrontChannelLogoutUri: 'https://legacy.example.com/signout',
    AccessTokenType: 1,
    RequireRequestObject: true,
    AllowedIdentityTokenSigningAlgorithms: 'RS256 ES256',
    EnableLocalLogin: true,
  });
  // The implicit grant comes only with migrated clients (the admin API refuses it).
  await h.context.db
    .updateTable('clients')
    .set({ grant_types: JSON.stringify(['authorization_code', 'implicit']) })
    .where('client_id', '=', 'legacy')
    .execute();
  const read = await h.admin('GET', '/api/v1/clients/legacy');
  const named = (read.body.unsupportedSettings as Array<{ setting: string }>).map((u) => u.setting);
  expect(named).toEqual([
    'FrontChannelLogoutUri',
    'RequireRequestObject',
    'AllowedIdentityTokenSigningAlgorithms',
    'AllowedGrantTypes',
  ]);
  expect(read.body.unsupportedSettings[3]).toMatchObject({
    value: ['implicit'],
    effect: expect.stringMatching(/refused/),
  });
  const { ClientId: _id, AllowedGrantTypes: _grants, ...body } = read.body;
  const written = await h.admin('PUT', '/api/v1/clients/legacy', {
    ...body,
    AllowedGrantTypes: ['authorization_code'],
  });
  expect(written.status).toBe(200);
  expect((await h.admin('GET', '/api/v1/clients/shop')).body.unsupportedSettings).toEqual([]);
});

test('discovery lists what IdentityServer listed for the same configuration, and nothing that is not served', async () => {
  await h.context.db
    .insertInto('scopes')
    .values([
      {
        name: 'internal.read',
        kind: 'api',
        user_claims: JSON.stringify([]),
        origin: 'migration',
        show_in_discovery: false,
      },
      {
        name: 'hidden',
        kind: 'identity',
        user_claims: JSON.stringify(['hidden_claim']),
        origin: 'migration',
        show_in_discovery: false,
      },
    ])
    .execute();
  const discovery = (await h.request('GET', '/.well-known/openid-configuration')).body;
  expect(discovery.scopes_supported).toEqual(
    expect.arrayContaining(['openid', 'offline_access', 'profile', 'orders.read', 'billing.read']),
  );
  expect(discovery.scopes_supported).not.toContain('internal.read');
  expect(discovery.scopes_supported).not.toContain('hidden');
  // password: served to the clients migrated with it.
  expect(discovery.grant_types_supported.sort()).toEqual([
    'authorization_code',
    'client_credentials',
    'password',
    'refresh_token',
    'urn:ietf:params:oauth:grant-type:device_code',
  ]);
  expect(discovery.introspection_endpoint).toBe(`${h.api.publicUrl}/connect/introspect`);
  expect(discovery.revocation_endpoint).toBe(`${h.api.publicUrl}/connect/revocation`);
  expect(discovery.end_session_endpoint).toBe(`${h.api.publicUrl}/connect/endsession`);
  expect(discovery.device_authorization_endpoint).toBe(`${h.api.publicUrl}/connect/deviceauthorization`);
  expect(discovery.grant_types_supported).toContain('urn:ietf:params:oauth:grant-type:device_code');
  // Back-channel logout as IdentityServer advertises it (back-channel-logout.test.ts sends the tokens).
  expect(discovery).toMatchObject({ backchannel_logout_supported: true, backchannel_logout_session_supported: true });
  // Not served, so not advertised: DPoP, pushed requests, front-channel logout.
  for (const absent of [
    'dpop_signing_alg_values_supported',
    'pushed_authorization_request_endpoint',
    'frontchannel_logout_supported',
  ])
    expect(discovery).not.toHaveProperty(absent);
  // Advertised endpoints answer.
  for (const endpoint of ['jwks_uri', 'userinfo_endpoint', 'introspection_endpoint', 'revocation_endpoint'])
    expect((await fetch(discovery[endpoint], { method: endpoint === 'jwks_uri' ? 'GET' : 'POST' })).status).not.toBe(
      404,
    );
});

test("the device flow: a TV asks at IdentityServer's path, a person enters its code at /device and signs in, the TV gets tokens", async () => {
  await putClient('tv-app', {
    ClientName: 'Living-room TV',
    RequireClientSecret: false,
    AllowedGrantTypes: ['urn:ietf:params:oauth:grant-type:device_code'],
    AllowedScopes: ['openid', 'orders.read'],
    AllowOfflineAccess: true,
  });
  const email = uniqueEmail('device');
  const created = await h.admin('POST', '/api/v1/profile/', { email, password: PASSWORD });
  const tv = await relyingParty(h.api.publicUrl, 'tv-app');
  const asked = await oidc.initiateDeviceAuthorization(tv, { scope: 'openid orders.read offline_access' });
  expect(asked.verification_uri).toBe(`${h.api.publicUrl}/device`);
  expect(asked.user_code).toMatch(/^[A-Z]{4}-[A-Z]{4}$/);
  const polled = oidc.pollDeviceAuthorizationGrant(tv, asked);

  const person = browser(CALLBACK);
  const entry = (await person.open(asked.verification_uri)) as Visit;
  expect(textOf(entry)).toContain('Enter the code your device shows');
  const wrong = (await person.submit('/device', { user_code: 'BCDF-GHJK' })) as Visit;
  expect(textOf(wrong)).toContain('That code is not right');
  const confirm = (await person.submit('/device', { user_code: asked.user_code.toLowerCase() })) as Visit;
  expect(textOf(confirm)).toContain('Living-room TV on a device asks to use your account');
  expect(textOf(confirm)).toContain(asked.user_code);
  const form = confirm.html.match(/<form method="post" action="([^"]+)">/)![1];
  await person.submit(form, { confirm: 'yes' });
  await person.submit('/email', { email });
  const done = (await person.submit('/password', { password: PASSWORD })) as Visit;
  expect(textOf(done)).toContain('Living-room TV is signed in');

  const tokens = await polled;
  const claims = await apiAccepts('orders-api', 'orders.read', tokens.access_token);
  expect(claims).toMatchObject({ sub: created.body.userId, client_id: 'tv-app', amr: ['pwd'], idp: 'local' });
  expect(tokens.refresh_token).toBeDefined();
}, 60_000);

describe('the resource-owner password grant, for the clients migrated with it', () => {
  const token = (clientId: string, secret: string, form: Record<string, string>) =>
    fetch(`${h.api.url}/connect/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from(`${clientId}:${secret}`).toString('base64')}`,
      },
      body: new URLSearchParams({ grant_type: 'password', ...form }).toString(),
    });

  beforeAll(async () => {
    await putClient('mobile-legacy', {
      AllowedGrantTypes: ['authorization_code'],
      RedirectUris: [CALLBACK],
      AllowedScopes: ['openid', 'profile', 'orders.read'],
      AllowOfflineAccess: true,
      ClientSecrets: [{ Value: 'mobile-legacy-secret!' }],
    });
    // As the migration writes a client that had the password grant at IdentityServer.
    await h.context.db
      .updateTable('clients')
      .set({ grant_types: JSON.stringify(['authorization_code', 'password']), origin: 'migration' })
      .where('client_id', '=', 'mobile-legacy')
      .execute();
  });

  test('a migrated client gets tokens as from the code flow; refreshing works; the audit trail has the sign-in', async () => {
    const email = uniqueEmail('ropc');
    const created = await h.admin('POST', '/api/v1/profile/', { email, password: PASSWORD });
    const answer = await token('mobile-legacy', 'mobile-legacy-secret!', {
      username: email,
      password: PASSWORD,
      scope: 'openid orders.read offline_access',
    });
    expect(answer.status).toBe(200);
    const body = await answer.json();
    const claims = await apiAccepts('orders-api', 'orders.read', body.access_token);
    expect(claims).toMatchObject({ sub: created.body.userId, client_id: 'mobile-legacy', amr: ['pwd'], idp: 'local' });
    const jwks = createRemoteJWKSet(new URL(`${h.api.publicUrl}/.well-known/openid-configuration/jwks`));
    const id = await jwtVerify(body.id_token, jwks, { issuer: h.api.publicUrl, audience: 'mobile-legacy' });
    expect(id.payload).toMatchObject({ sub: created.body.userId, amr: ['pwd'], idp: 'local' });

    const rp = await relyingParty(h.api.publicUrl, 'mobile-legacy', 'mobile-legacy-secret!');
    const refreshed = await oidc.refreshTokenGrant(rp, body.refresh_token);
    expect(await apiAccepts('orders-api', 'orders.read', refreshed.access_token)).toMatchObject({
      sub: created.body.userId,
      amr: ['pwd'],
    });
    const events = (await h.admin('GET', `/api/v1/audit-events?userId=${created.body.userId}&type=sign-in-succeeded`))
      .body.events;
    expect(events[0]).toMatchObject({ clientId: 'mobile-legacy', detail: { method: 'password', grant: 'password' } });
  });

  test('wrong passwords lock the account as the sign-in pages do; two-step users and unknown accounts get the same refusal', async () => {
    const email = uniqueEmail('ropc-lock');
    const created = await h.admin('POST', '/api/v1/profile/', { email, password: PASSWORD });
    const attempt = async (username: string, password: string) => {
      const answer = await token('mobile-legacy', 'mobile-legacy-secret!', { username, password, scope: 'openid' });
      return { status: answer.status, body: await answer.json() };
    };
    for (let i = 0; i < 5; i++)
      expect(await attempt(email, 'wrong password 1')).toEqual({
        status: 400,
        body: { error: 'invalid_grant', error_description: 'grant request is invalid' },
      });
    // Locked: the right password is not even checked.
    expect((await attempt(email, PASSWORD)).status).toBe(400);
    expect((await attempt(uniqueEmail('ropc-nobody'), PASSWORD)).body.error).toBe('invalid_grant');
    // Two-step verification cannot be done through this grant: the user is refused, with the reason in the audit trail.
    const mfaEmail = uniqueEmail('ropc-mfa');
    const mfaUser = await h.admin('POST', '/api/v1/profile/', { email: mfaEmail, password: PASSWORD });
    await enrolTotp(
      h.context.db,
      `totp-${mfaUser.body.userId}`,
      mfaUser.body.userId,
      protectSecret(Buffer.alloc(20, 1), h.context.dataProtection!),
      0,
    );
    expect((await attempt(mfaEmail, PASSWORD)).body.error).toBe('invalid_grant');
    const mfaEvents = (await h.admin('GET', `/api/v1/audit-events?userId=${mfaUser.body.userId}&type=sign-in-failed`))
      .body.events;
    expect(mfaEvents[0].detail).toMatchObject({ reason: 'second-factor-required' });
    const reasons = (
      await h.admin('GET', `/api/v1/audit-events?userId=${created.body.userId}&type=sign-in-failed`)
    ).body.events.map((e: { detail: { reason: string } }) => e.detail.reason);
    expect(reasons).toEqual([
      'locked',
      'wrong-password',
      'wrong-password',
      'wrong-password',
      'wrong-password',
      'wrong-password',
    ]);
  });

  test('a username or password the store cannot hold (NUL, too long) is a clear 400, not a fault', async () => {
    for (const form of [
      { username: 'a\u0000@example.com', password: PASSWORD },
      { username: `${'a'.repeat(300)}@example.com`, password: PASSWORD },
      { username: 'someone@example.com', password: 'x'.repeat(2000) },
      { username: '', password: PASSWORD },
    ]) {
      const answer = await token('mobile-legacy', 'mobile-legacy-secret!', form);
      expect(answer.status).toBe(400);
      expect((await answer.json()).error).toBe('invalid_request');
    }
  });

  test('a client that did not have the grant is refused it, and the admin API never gives it to a client', async () => {
    const email = uniqueEmail('ropc-other');
    await h.admin('POST', '/api/v1/profile/', { email, password: PASSWORD });
    const answer = await token('shop', 'shop-secret-sixteen!', { username: email, password: PASSWORD });
    expect(answer.status).toBe(400);
    // oidc-provider's answer for a grant type the client's metadata does not list.
    expect(await answer.json()).toEqual({ error: 'invalid_request', error_description: GRANT_NOT_ALLOWED });
    const put = await h.admin('PUT', '/api/v1/clients/new-ropc', {
      AllowedGrantTypes: ['password'],
      AllowedScopes: ['openid'],
      ClientSecrets: [{ Value: 'new-ropc-secret-sixteen' }],
    });
    expect(put.status).toBe(400);
    expect(put.body.detail).toMatch(/kept for clients migrated with it/);
  });

  // Issue 37 item 12: a PUT once made a migrated password client public, and the grant then needed no client secret.
  test('a migrated password client cannot be made public, and a stored public one is refused the grant', async () => {
    const migrated = {
      AllowedGrantTypes: ['authorization_code'],
      RedirectUris: [CALLBACK],
      AllowedScopes: ['openid', 'orders.read'],
      ClientSecrets: [{ Value: 'mobile-public-secret!' }],
    };
    await putClient('mobile-public', migrated);
    await h.context.db
      .updateTable('clients')
      .set({ grant_types: JSON.stringify(['authorization_code', 'password']), origin: 'migration' })
      .where('client_id', '=', 'mobile-public')
      .execute();
    const put = await h.admin('PUT', '/api/v1/clients/mobile-public', {
      ...migrated,
      AllowedGrantTypes: ['authorization_code', 'password'],
      RequireClientSecret: false,
    });
    expect(put.status).toBe(400);
    expect(put.body.detail).toMatch(/^AllowedGrantTypes: password needs a client secret/);

    // As a migration or an earlier build could have left it: the grant is not served without client authentication.
    const settings = (await h.admin('GET', '/api/v1/clients/mobile-public')).body;
    expect(settings.RequireClientSecret).not.toBe(false);
    await h.context.db
      .updateTable('clients')
      .set({ settings: sql`settings || '{"RequireClientSecret": false}'::jsonb` })
      .where('client_id', '=', 'mobile-public')
      .execute();
    const email = uniqueEmail('ropc-public');
    await h.admin('POST', '/api/v1/profile/', { email, password: PASSWORD });
    const answer = await fetch(`${h.api.url}/connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'password',
        client_id: 'mobile-public',
        username: email,
        password: PASSWORD,
        scope: 'openid',
      }).toString(),
    });
    expect(answer.status).toBe(400);
    expect(await answer.json()).toEqual({ error: 'invalid_request', error_description: GRANT_NOT_ALLOWED });
  });
});

test('a reference-token client gets opaque tokens; an API introspects them with its ApiResourceSecret, and revocation ends them', async () => {
  // The APIs' secrets, as the migration writes ApiResourceSecrets (SHA-256 digests).
  for (const api of ['orders-api', 'billing-api'])
    await h.context.db
      .insertInto('client_secrets')
      .values({
        id: `${api}-secret`,
        client_id: api,
        value: hashClientSecret(`${api}-secret-sixteen`),
        description: null,
        expiration: null,
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
  await putClient('reference', { ...SHOP, AccessTokenType: 1 });
  const email = uniqueEmail('reference');
  const created = await h.admin('POST', '/api/v1/profile/', { email, password: PASSWORD });
  const rp = await relyingParty(h.api.publicUrl, 'reference', 'shop-secret-sixteen!');
  const started = await flow.start(rp, 'openid orders.read');
  const tokens = await flow.tokens(rp, started, await flow.signIn(started, email, PASSWORD));
  expect(tokens.access_token.split('.')).toHaveLength(1);

  // An API as its team writes introspection: Basic authentication with its name and secret, or the form.
  const introspect = async (api: string, secret: string, basic = true) => {
    const body = new URLSearchParams({
      token: tokens.access_token,
      ...(basic ? {} : { client_id: api, client_secret: secret }),
    });
    const answer = await fetch(`${h.api.url}/connect/introspect`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        ...(basic ? { authorization: `Basic ${Buffer.from(`${api}:${secret}`).toString('base64')}` } : {}),
      },
      body: body.toString(),
    });
    expect(answer.status).toBe(200);
    return (await answer.json()) as Record<string, unknown>;
  };
  expect(await introspect('orders-api', 'orders-api-secret-sixteen')).toMatchObject({
    active: true,
    sub: created.body.userId,
    client_id: 'reference',
    scope: 'orders.read',
  });
  expect(await introspect('orders-api', 'orders-api-secret-sixteen', false)).toMatchObject({ active: true });
  // Not one of its scopes: inactive to that API.
  expect(await introspect('billing-api', 'billing-api-secret-sixteen')).toEqual({ active: false });
  await oidc.tokenRevocation(rp, tokens.access_token);
  expect(await introspect('orders-api', 'orders-api-secret-sixteen')).toEqual({ active: false });
  // An API resource is no client: its secret gets it no token.
  const api = await relyingParty(h.api.publicUrl, 'orders-api', 'orders-api-secret-sixteen');
  await expect(oidc.clientCredentialsGrant(api, { scope: 'orders.read' })).rejects.toMatchObject({
    error: 'invalid_request',
    error_description: GRANT_NOT_ALLOWED,
  });
});

test("refresh tokens live as IdentityServer's RefreshTokenExpiration says: Absolute (its default) or Sliding", async () => {
  const lifetimes = { AbsoluteRefreshTokenLifetime: 7200, SlidingRefreshTokenLifetime: 600 };
  const expiresIn = async (clientId: string, settings: Record<string, unknown>) => {
    await putClient(clientId, { ...SHOP, ...lifetimes, ...settings });
    const email = uniqueEmail(`expiry-${clientId}`);
    await h.admin('POST', '/api/v1/profile/', { email, password: PASSWORD });
    const rp = await relyingParty(h.api.publicUrl, clientId, 'shop-secret-sixteen!');
    const started = await flow.start(rp, 'openid offline_access');
    const tokens = await flow.tokens(rp, started, await flow.signIn(started, email, PASSWORD));
    expect(tokens.refresh_token).toBeDefined();
    const stored = await h.context.db
      .selectFrom('oidc_payloads')
      .select('expires_at')
      .where('model', '=', 'RefreshToken')
      .where(sql<boolean>`payload->>'clientId' = ${clientId}`)
      .executeTakeFirstOrThrow();
    return Math.round((stored.expires_at!.getTime() - Date.now()) / 1000);
  };
  expect(await expiresIn('absolute-default', {})).toBeGreaterThan(7100);
  expect(await expiresIn('absolute', { RefreshTokenExpiration: 1 })).toBeGreaterThan(7100);
  const sliding = await expiresIn('sliding', { RefreshTokenExpiration: 0 });
  expect(sliding).toBeGreaterThan(500);
  expect(sliding).toBeLessThanOrEqual(600);
});

// Issue 37 item 1: a client allowed only orders.read once got a token naming every API (and the admin API) in `aud`
// by asking for their scopes or for a combined indicator; an API checking only issuer and audience took it.
describe('a token names only the APIs whose scopes this client was granted for this request', () => {
  const NARROW_SECRET = 'narrow-secret-sixteen!';
  const GREEDY = 'openid orders.read billing.read hr.read IdentityAdmin';
  const COMBINED = 'urn:identity-service:api:orders-api+billing-api+hr-api+IdentityAdmin';
  const OTHER_APIS = ['billing-api', 'hr-api', 'IdentityAdmin'];

  /** The audiences an API reads from the token, verified with jose against the published JWKS. */
  async function audiences(token: string): Promise<string[]> {
    const jwks = createRemoteJWKSet(new URL(`${h.api.publicUrl}/.well-known/openid-configuration/jwks`));
    const { payload } = await jwtVerify(token, jwks, { issuer: h.api.publicUrl, typ: 'at+jwt' });
    for (const api of OTHER_APIS)
      await expect(jwtVerify(token, jwks, { issuer: h.api.publicUrl, audience: api })).rejects.toThrow(/aud/);
    return [payload.aud ?? []].flat();
  }

  /** A person confirms a device's code and signs in; the device's poll ends with its tokens. */
  async function deviceTokens(tv: oidc.Configuration, scope: string) {
    const email = uniqueEmail('narrow-device');
    await h.admin('POST', '/api/v1/profile/', { email, password: PASSWORD });
    const asked = await oidc.initiateDeviceAuthorization(tv, { scope });
    const polled = oidc.pollDeviceAuthorizationGrant(tv, asked);
    const person = browser(CALLBACK);
    await person.open(asked.verification_uri);
    const confirm = (await person.submit('/device', { user_code: asked.user_code })) as Visit;
    await person.submit(confirm.html.match(/<form method="post" action="([^"]+)">/)![1], { confirm: 'yes' });
    await person.submit('/email', { email });
    await person.submit('/password', { password: PASSWORD });
    return polled;
  }

  beforeAll(async () => {
    await h.context.db
      .insertInto('scopes')
      .values({ name: 'hr.read', kind: 'api', user_claims: JSON.stringify([]), origin: 'migration' })
      .execute();
    await h.context.db
      .insertInto('clients')
      .values({
        client_id: 'hr-api',
        client_name: 'hr-api',
        enabled: true,
        settings: JSON.stringify({ apiResource: true, audience: 'hr-api' }),
        allowed_scopes: JSON.stringify(['hr.read']),
        grant_types: JSON.stringify([]),
        origin: 'migration',
      } as never)
      .execute();
    const secret = [{ Value: NARROW_SECRET }];
    await putClient('narrow-cc', {
      AllowedGrantTypes: ['client_credentials'],
      AllowedScopes: ['orders.read'],
      ClientSecrets: secret,
    });
    await putClient('narrow-web', { ...SHOP, AllowedScopes: ['openid', 'orders.read'], ClientSecrets: secret });
    await putClient('narrow-tv', {
      RequireClientSecret: false,
      AllowedGrantTypes: ['urn:ietf:params:oauth:grant-type:device_code'],
      AllowedScopes: ['openid', 'orders.read'],
    });
  });

  test('client credentials: scopes it does not have, or a combined indicator, add no audience', async () => {
    const cc = await relyingParty(h.api.publicUrl, 'narrow-cc', NARROW_SECRET);
    const greedy = await oidc.clientCredentialsGrant(cc, { scope: 'orders.read billing.read hr.read IdentityAdmin' });
    expect(await audiences(greedy.access_token)).toEqual(['orders-api']);
    // A combined indicator is the service's own: a request naming one is refused.
    await expect(oidc.clientCredentialsGrant(cc, { scope: 'orders.read', resource: COMBINED })).rejects.toMatchObject({
      error: 'invalid_target',
    });
    await expect(
      oidc.clientCredentialsGrant(cc, { scope: 'orders.read', resource: 'urn:identity-service:api:billing-api' }),
    ).rejects.toMatchObject({ error: 'invalid_target' });
  });

  test('the code flow: the greedy request gets a token for orders-api alone, refreshed the same; a combined indicator is refused', async () => {
    const email = uniqueEmail('narrow-web');
    await h.admin('POST', '/api/v1/profile/', { email, password: PASSWORD });
    const rp = await relyingParty(h.api.publicUrl, 'narrow-web', NARROW_SECRET);
    const started = await flow.start(rp, `${GREEDY} offline_access`);
    const tokens = await flow.tokens(rp, started, await flow.signIn(started, email, PASSWORD));
    expect(await audiences(tokens.access_token)).toEqual(['orders-api']);
    const refreshed = await oidc.refreshTokenGrant(rp, tokens.refresh_token!);
    expect(await audiences(refreshed.access_token)).toEqual(['orders-api']);

    const combined = await flow.start(rp, 'openid orders.read', { resource: COMBINED });
    expect(combined.first).toBeInstanceOf(URL);
    expect((combined.first as URL).searchParams.get('error')).toBe('invalid_target');
  });

  test('refreshing for fewer scopes drops the APIs of the scopes left out', async () => {
    const { rp, tokens } = await userTokens('openid orders.read billing.read offline_access');
    await apiAccepts('billing-api', 'billing.read', tokens.access_token);
    const narrowed = await oidc.refreshTokenGrant(rp, tokens.refresh_token!, { scope: 'openid orders.read' });
    expect(await audiences(narrowed.access_token)).toEqual(['orders-api']);
    // Identity scopes alone: a token for userinfo, for no API.
    const identity = await oidc.refreshTokenGrant(rp, narrowed.refresh_token!, { scope: 'openid' });
    expect(identity.access_token.split('.')).toHaveLength(1);
  });

  test('the device flow: the greedy request gets a token for orders-api alone; a combined indicator is refused', async () => {
    const tv = await relyingParty(h.api.publicUrl, 'narrow-tv');
    const tokens = await deviceTokens(tv, GREEDY);
    expect(await audiences(tokens.access_token)).toEqual(['orders-api']);
    await expect(
      oidc.initiateDeviceAuthorization(tv, { scope: 'openid orders.read', resource: COMBINED }),
    ).rejects.toMatchObject({ error: 'invalid_target' });
  }, 60_000);

  test("a reference token's introspection names its audiences as an array", async () => {
    for (const api of ['orders-api', 'billing-api'])
      await h.context.db
        .insertInto('client_secrets')
        .values({
          id: `${api}-secret`,
          client_id: api,
          value: hashClientSecret(`${api}-secret-sixteen`),
          description: null,
          expiration: null,
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
    await putClient('reference-both', { ...SHOP, AccessTokenType: 1 });
    const email = uniqueEmail('reference-both');
    await h.admin('POST', '/api/v1/profile/', { email, password: PASSWORD });
    const rp = await relyingParty(h.api.publicUrl, 'reference-both', 'shop-secret-sixteen!');
    const started = await flow.start(rp, 'openid orders.read billing.read');
    const tokens = await flow.tokens(rp, started, await flow.signIn(started, email, PASSWORD));
    const answer = await fetch(`${h.api.url}/connect/introspect`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from('orders-api:orders-api-secret-sixteen').toString('base64')}`,
      },
      body: new URLSearchParams({ token: tokens.access_token }).toString(),
    });
    const body = (await answer.json()) as { active: boolean; aud: unknown };
    expect(body.active).toBe(true);
    expect(Array.isArray(body.aud)).toBe(true);
    expect((body.aud as string[]).sort()).toEqual(['billing-api', 'orders-api']);
  });
});

// Issue 37 item 2: a rotated refresh token was given the whole AbsoluteRefreshTokenLifetime again, so a token used
// once in a while never died. IdentityServer measures the absolute end from the first issue, through every rotation.
describe('a refresh token ends AbsoluteRefreshTokenLifetime after its first issue, however often it rotates', () => {
  const ABSOLUTE = 7200;
  /** Seconds until the stored refresh token with this handle expires. */
  const secondsLeft = async (handle: string) => {
    const row = await h.context.db
      .selectFrom('oidc_payloads')
      .select('expires_at')
      .where('model', '=', 'RefreshToken')
      .where('id', '=', handle)
      .executeTakeFirstOrThrow();
    return Math.round((row.expires_at!.getTime() - Date.now()) / 1000);
  };
  /** A user's refresh token of this client, first issued `age` seconds ago (as if the client had held it so long). */
  async function agedRefreshToken(clientId: string, settings: Record<string, unknown>, age: number) {
    await putClient(clientId, { ...SHOP, ...settings });
    const email = uniqueEmail(`aged-${clientId}`);
    await h.admin('POST', '/api/v1/profile/', { email, password: PASSWORD });
    const rp = await relyingParty(h.api.publicUrl, clientId, 'shop-secret-sixteen!');
    const started = await flow.start(rp, 'openid orders.read offline_access');
    const tokens = await flow.tokens(rp, started, await flow.signIn(started, email, PASSWORD));
    const issued = Math.floor(Date.now() / 1000) - age;
    await h.context.db
      .updateTable('oidc_payloads')
      .set({ payload: sql`payload || jsonb_build_object('iat', ${issued}::int, 'iiat', ${issued}::int)` })
      .where('model', '=', 'RefreshToken')
      .where('id', '=', tokens.refresh_token!)
      .execute();
    return { rp, handle: tokens.refresh_token! };
  }

  test('Absolute: a token with 200 s left is rotated into one with 200 s left, and again', async () => {
    const { rp, handle } = await agedRefreshToken('rt-absolute', { AbsoluteRefreshTokenLifetime: ABSOLUTE }, 7000);
    const first = await oidc.refreshTokenGrant(rp, handle);
    expect(await secondsLeft(first.refresh_token!)).toBeLessThanOrEqual(200);
    const second = await oidc.refreshTokenGrant(rp, first.refresh_token!);
    expect(await secondsLeft(second.refresh_token!)).toBeLessThanOrEqual(200);
  });

  test('Sliding: each use extends by SlidingRefreshTokenLifetime, never past the absolute end; 0 absolute slides on', async () => {
    const sliding = { RefreshTokenExpiration: 0, SlidingRefreshTokenLifetime: 600 };
    const capped = await agedRefreshToken('rt-sliding', { ...sliding, AbsoluteRefreshTokenLifetime: ABSOLUTE }, 7000);
    const next = await oidc.refreshTokenGrant(capped.rp, capped.handle);
    expect(await secondsLeft(next.refresh_token!)).toBeLessThanOrEqual(200);
    // Young enough: the full slide.
    const young = await agedRefreshToken(
      'rt-sliding-young',
      { ...sliding, AbsoluteRefreshTokenLifetime: ABSOLUTE },
      60,
    );
    expect(await secondsLeft((await oidc.refreshTokenGrant(young.rp, young.handle)).refresh_token!)).toBeGreaterThan(
      590,
    );
    // No absolute limit: a token first issued 40 days ago still slides by 600 s.
    const endless = await agedRefreshToken(
      'rt-sliding-endless',
      { ...sliding, AbsoluteRefreshTokenLifetime: 0 },
      40 * 86400,
    );
    const slid = await oidc.refreshTokenGrant(endless.rp, endless.handle);
    expect(await secondsLeft(slid.refresh_token!)).toBeGreaterThan(590);
    expect(await secondsLeft(slid.refresh_token!)).toBeLessThanOrEqual(600);
  });

  test('a migrated refresh token keeps its creation as the first issue: redeemed with 200 s left, its successor has 200 s', async () => {
    await putClient('rt-migrated', { ...SHOP, AbsoluteRefreshTokenLifetime: ABSOLUTE });
    const email = uniqueEmail('rt-migrated');
    const created = await h.admin('POST', '/api/v1/profile/', { email, password: PASSWORD });
    // As the migration's refresh-tokens pass writes a source fork's token (data in the service's shape).
    const handle = await storeCarriedOverGrant(h.context.db, {
      key: `migrated-${randomUUID()}`,
      subjectId: created.body.userId,
      clientId: 'rt-migrated',
      createdAt: new Date(Date.now() - 7000_000),
      expiresAt: new Date(Date.now() + 200_000),
      data: { scope: 'openid orders.read offline_access' },
    });
    const rp = await relyingParty(h.api.publicUrl, 'rt-migrated', 'shop-secret-sixteen!');
    const first = await oidc.refreshTokenGrant(rp, handle);
    expect(await secondsLeft(first.refresh_token!)).toBeLessThanOrEqual(200);
    const second = await oidc.refreshTokenGrant(rp, first.refresh_token!);
    expect(await secondsLeft(second.refresh_token!)).toBeLessThanOrEqual(200);
  });
});

// Issue 37 item 10: an API resource read any client's refresh token at introspection (its scopes were enough).
test('an API resource introspects access tokens carrying one of its scopes, never a refresh token', async () => {
  await h.context.db
    .insertInto('client_secrets')
    .values({
      id: 'orders-api-secret',
      client_id: 'orders-api',
      value: hashClientSecret('orders-api-secret-sixteen'),
      description: null,
      expiration: null,
    })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
  const introspect = async (token: string) => {
    const answer = await fetch(`${h.api.url}/connect/introspect`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        authorization: `Basic ${Buffer.from('orders-api:orders-api-secret-sixteen').toString('base64')}`,
      },
      body: new URLSearchParams({ token }).toString(),
    });
    return (await answer.json()) as { active: boolean };
  };
  await putClient('reference-offline', { ...SHOP, AccessTokenType: 1 });
  const email = uniqueEmail('reference-offline');
  await h.admin('POST', '/api/v1/profile/', { email, password: PASSWORD });
  const rp = await relyingParty(h.api.publicUrl, 'reference-offline', 'shop-secret-sixteen!');
  const started = await flow.start(rp, 'openid orders.read offline_access');
  const reference = await flow.tokens(rp, started, await flow.signIn(started, email, PASSWORD));
  expect((await introspect(reference.access_token)).active).toBe(true);
  expect(await introspect(reference.refresh_token!)).toEqual({ active: false });
  // Another client's refresh token (a JWT client's), for the same scope.
  const { tokens } = await userTokens('openid orders.read offline_access');
  expect(await introspect(tokens.refresh_token!)).toEqual({ active: false });
  // The client the refresh token was issued to still reads it.
  const own = await oidc.tokenIntrospection(rp, reference.refresh_token!);
  expect(own.active).toBe(true);
});
