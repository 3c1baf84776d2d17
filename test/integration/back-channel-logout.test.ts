import { createServer, type Server } from 'node:http';
import { createRemoteJWKSet, decodeJwt, jwtVerify, type JWTPayload } from 'jose';
import * as oidc from 'openid-client';
import { uniqueEmail, useHarness, SIGN_IN_HARNESS } from '../support/harness';
import { codeFlow } from '../support/code-flow';
import { authorizationRequest, relyingParty } from '../support/relying-party';
import { browser, textOf, type Visit } from '../support/sign-in-flow';
import { counterValue } from '../support/metrics';
import { logEntries } from '../support/captured-log';
import { closeServer, listen, listeningUrl } from '../../platform/net/listen';
import { deleteUserReturningApps } from '../../platform/store/users';

// OpenID Connect Back-Channel Logout 1.0 (issue "Drop-in for IdentityServer's clients and APIs", item 4). The clients
// here receive logout tokens as their developers write the endpoint: jose checks the signature against the published
// JWKS, the issuer, the audience, the `logout+jwt` type and the event, and the endpoint answers 200 or 400.
const h = useHarness(SIGN_IN_HARNESS);

const PASSWORD = 'correct horse battery 9';
const CALLBACK = 'https://apps.example.com/callback';
const flow = codeFlow(CALLBACK);
const EVENT = 'http://schemas.openid.net/event/backchannel-logout';

/** What a client's logout endpoint received: the verified claims, or why it refused the request. */
type Received = { path: string; claims?: JWTPayload; refused?: string };
const received: Received[] = [];
/** Statuses an endpoint answers before it starts to accept (a client that is down for a moment). */
const failFirst = new Map<string, number[]>();
/** The tokens an endpoint answered with one of those statuses. */
const turnedAway: Array<{ path: string; jti?: string }> = [];
let receiver: Server;
let receiverUrl: string;

/** A client's back-channel logout endpoint, as its developers write one (Back-Channel Logout 1.0, §2.6 and §2.8). */
async function logoutEndpoint(path: string, body: string): Promise<number> {
  const token = new URLSearchParams(body).get('logout_token');
  const pending = failFirst.get(path);
  if (pending?.length) {
    turnedAway.push({ path, jti: token ? decodeJwt(token).jti : undefined });
    return pending.shift()!;
  }
  try {
    if (!token) throw new Error('no logout_token');
    const jwks = createRemoteJWKSet(new URL(`${h.api.publicUrl}/.well-known/openid-configuration/jwks`));
    const { payload } = await jwtVerify(token, jwks, {
      issuer: h.api.publicUrl,
      audience: path.split('/')[1],
      typ: 'logout+jwt',
      maxTokenAge: '5 minutes',
      requiredClaims: ['iat', 'exp', 'jti', 'events'],
    });
    if (!(payload.events && typeof payload.events === 'object' && EVENT in payload.events))
      throw new Error('not a logout event');
    if ('nonce' in payload) throw new Error('a logout token has no nonce');
    if (!payload.sub && !payload.sid) throw new Error('neither sub nor sid');
    received.push({ path, claims: payload });
    return 200;
  } catch (error) {
    received.push({ path, refused: (error as Error).message });
    return 400;
  }
}

const CLIENT_SECRET = 'client-secret-sixteen';
async function putClient(clientId: string, settings: Record<string, unknown>) {
  const answer = await h.admin('PUT', `/api/v1/clients/${clientId}`, {
    AllowedGrantTypes: ['authorization_code'],
    RedirectUris: [CALLBACK],
    PostLogoutRedirectUris: [CALLBACK],
    AllowedScopes: ['openid', 'profile'],
    ClientSecrets: [{ Value: CLIENT_SECRET }],
    ...settings,
  });
  if (answer.status !== 200 && answer.status !== 201) throw new Error(JSON.stringify(answer.body));
  return answer;
}
const logoutUri = (clientId: string) => `${receiverUrl}/${clientId}/logout`;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      void logoutEndpoint(req.url ?? '', body).then((status) => res.writeHead(status).end());
    });
  });
  await listen(receiver, 0, '127.0.0.1', 'logout receiver', 'none');
  receiverUrl = listeningUrl(receiver, '127.0.0.1');
  // shop wants the session id (IdentityServer's default), wiki only the subject; plain takes no logout tokens.
  await putClient('shop', { BackChannelLogoutUri: logoutUri('shop') });
  await putClient('wiki', { BackChannelLogoutUri: logoutUri('wiki'), BackChannelLogoutSessionRequired: false });
  await putClient('plain', {});
}, 60_000);

afterAll(() => closeServer(receiver));

/** Waits until `count` logout tokens reached `path` (each delivery is a workflow, so it arrives a moment later). */
async function tokensAt(path: string, count = 1, timeoutMs = 20_000): Promise<Received[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const at = received.filter((r) => r.path === path);
    if (at.length >= count) return at;
    if (Date.now() > deadline) throw new Error(`${at.length} of ${count} logout tokens reached ${path}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function newUser() {
  const email = uniqueEmail('bcl');
  const created = await h.admin('POST', '/api/v1/profile/', { email, password: PASSWORD });
  expect(created.status).toBe(201);
  return { email, userId: created.body.userId as string };
}

/** A person signs in to `clientId` in a browser of their own: a session, and the client's tokens. */
async function signIn(clientId: string, email: string) {
  const rp = await relyingParty(h.api.publicUrl, clientId, CLIENT_SECRET);
  const started = await flow.start(rp, 'openid profile');
  const tokens = await flow.tokens(rp, started, await flow.signIn(started, email, PASSWORD));
  return { rp, started, tokens };
}

test('signing out at /connect/endsession sends a logout token to each client of the session, which it verifies against the JWKS', async () => {
  const { email, userId } = await newUser();
  const shop = await signIn('shop', email);
  // The same browser goes on to wiki and plain: single sign-on, no password asked.
  const more: Record<string, oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers> = {};
  for (const clientId of ['wiki', 'plain']) {
    const rp = await relyingParty(h.api.publicUrl, clientId, CLIENT_SECRET);
    const state = oidc.randomState();
    const { url, verifier } = await authorizationRequest(rp, { redirect_uri: CALLBACK, scope: 'openid', state });
    const back = await shop.started.page.open(url);
    expect(back).toBeInstanceOf(URL);
    more[clientId] = await oidc.authorizationCodeGrant(rp, back as URL, {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
  }
  const before = received.length;

  const confirm = (await shop.started.page.open(
    `${h.api.url}/connect/endsession?${new URLSearchParams({ id_token_hint: shop.tokens.id_token!, post_logout_redirect_uri: CALLBACK }).toString()}`,
  )) as Visit;
  // A valid hint: no question; the page submits the form oidc-provider wrote (its xsrf value, logout=yes) itself.
  expect(textOf(confirm)).toContain('Signing out');
  const action = /action="([^"]+)"/.exec(confirm.html)![1];
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(confirm.html)![1];
  const signedOut = await fetch(new URL(action, h.api.url), {
    method: 'POST',
    redirect: 'manual',
    headers: {
      cookie: shop.started.page.jar.header(h.api.url),
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ xsrf, logout: 'yes' }).toString(),
  });
  expect(signedOut.headers.get('location')).toContain(CALLBACK);

  const [atShop] = await tokensAt('/shop/logout');
  const [atWiki] = await tokensAt('/wiki/logout');
  expect(atShop.claims).toMatchObject({
    iss: h.api.publicUrl,
    aud: 'shop',
    sub: userId,
    // The session id the client's ID token carried: the client ends that session.
    sid: shop.tokens.claims()!.sid,
    events: { [EVENT]: {} },
  });
  expect(atShop.claims!.exp! - atShop.claims!.iat!).toBe(300);
  // BackChannelLogoutSessionRequired false: the subject only.
  expect(atWiki.claims).toMatchObject({ aud: 'wiki', sub: userId });
  expect(atWiki.claims!.sid).toBeUndefined();
  expect(more.wiki.claims()!.sid).toEqual(expect.any(String));
  expect(received.slice(before).filter((r) => r.refused)).toEqual([]);
  expect(received.filter((r) => r.path.startsWith('/plain'))).toEqual([]);
  expect(await counterValue('backchannel_logout_deliveries_total', { client: 'shop', outcome: 'delivered' })).toBe(1);
});

test("an admin ending a user's sessions tells each client once per session, with that session's id", async () => {
  const { email, userId } = await newUser();
  const laptop = await signIn('shop', email);
  const phone = await signIn('shop', email);
  expect(laptop.tokens.claims()!.sid).not.toBe(phone.tokens.claims()!.sid);

  expect((await h.admin('DELETE', `/api/v1/profile/${userId}/sessions`)).status).toBe(204);

  const tokens = (await tokensAt('/shop/logout', 3)).filter((r) => r.claims?.sub === userId);
  expect(tokens.map((r) => r.claims!.sid).sort()).toEqual(
    [laptop.tokens.claims()!.sid, phone.tokens.claims()!.sid].sort(),
  );
  expect(new Set(tokens.map((r) => r.claims!.jti)).size).toBe(2);
});

test("ending one session on /account tells its clients with that session's id only; the other session stays", async () => {
  const { email, userId } = await newUser();
  const laptop = await signIn('shop', email);
  const phone = await signIn('shop', email);
  const before = received.filter((r) => r.claims?.sub === userId).length;
  const page = (await phone.started.page.open(`${h.api.publicUrl}/account`)) as Visit;
  expect(textOf(page)).toContain('End this session');
  expect(textOf((await phone.started.page.submit('/account/sessions/end-one', {})) as Visit)).toContain(
    'The session is ended',
  );
  const told = await (async () => {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const mine = received.filter((r) => r.claims?.sub === userId);
      if (mine.length > before || Date.now() > deadline) return mine.slice(before);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  })();
  expect(told.map((r) => r.claims!.sid)).toEqual([laptop.tokens.claims()!.sid]);
  // The phone's session is not told about and still signs in to wiki without a password.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  expect(received.filter((r) => r.claims?.sub === userId).slice(before)).toHaveLength(1);
  const rp = await relyingParty(h.api.publicUrl, 'wiki', CLIENT_SECRET);
  const { url } = await authorizationRequest(rp, { redirect_uri: CALLBACK, scope: 'openid' });
  expect(await phone.started.page.open(url)).toBeInstanceOf(URL);
  expect(await laptop.started.page.open(url)).not.toBeInstanceOf(URL);
});

test('deleting a user (admin API) and deactivating one (SCIM) sign it out of its clients and tell them', async () => {
  const deleted = await newUser();
  await signIn('wiki', deleted.email);
  const deactivated = await newUser();
  await signIn('wiki', deactivated.email);
  const token = (await h.admin('POST', '/api/v1/scim/tokens', { description: 'okta' })).body.token as string;

  expect((await h.admin('DELETE', `/api/v1/profile/${deleted.userId}`)).status).toBe(204);
  const patched = await h.request(
    'PATCH',
    `/scim/v2/Users/${deactivated.userId}`,
    JSON.stringify({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
      Operations: [{ op: 'replace', value: { active: false } }],
    }),
    { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' },
  );
  expect(patched.status).toBe(200);

  const deadline = Date.now() + 20_000;
  const subjects = () => received.filter((r) => r.path === '/wiki/logout').map((r) => r.claims?.sub);
  while (!(subjects().includes(deleted.userId) && subjects().includes(deactivated.userId)) && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 100));
  expect(subjects()).toEqual(expect.arrayContaining([deleted.userId, deactivated.userId]));
  // The deactivated user's sessions are gone too: nothing of them is left to sign in with.
  const left = await h.context.db
    .selectFrom('oidc_payloads')
    .select('model')
    .where((eb) => eb(eb.ref('payload', '->>').key('accountId' as never), '=', deactivated.userId))
    .execute();
  expect(left).toEqual([]);
});

test('a removal run again (a worker lost before Temporal recorded the step) answers the same clients to tell', async () => {
  const { email, userId } = await newUser();
  const { tokens } = await signIn('shop', email);
  const first = await deleteUserReturningApps(h.context.db, userId, `test-removal-${userId}`);
  const again = await deleteUserReturningApps(h.context.db, userId, `test-removal-${userId}`);
  expect(first.signOuts).toEqual([{ clientId: 'shop', sid: tokens.claims()!.sid }]);
  expect(again).toEqual(first);
});

test('a client that is down gets the token when it is back; one that refuses it is not asked again; each is counted and logged', async () => {
  await putClient('flaky', { BackChannelLogoutUri: logoutUri('flaky') });
  await putClient('refusing', { BackChannelLogoutUri: logoutUri('refusing') });
  failFirst.set('/flaky/logout', [503, 503]);
  failFirst.set('/refusing/logout', [400]);
  const { email, userId } = await newUser();
  await signIn('flaky', email);
  await signIn('refusing', email);

  expect((await h.admin('DELETE', `/api/v1/profile/${userId}/sessions`)).status).toBe(204);

  const [flaky] = await tokensAt('/flaky/logout');
  expect(flaky.claims).toMatchObject({ aud: 'flaky', sub: userId });
  // The retries carried the same logout (one jti), each in a token of its own time.
  expect(turnedAway.filter((t) => t.path === '/flaky/logout').map((t) => t.jti)).toEqual([
    flaky.claims!.jti,
    flaky.claims!.jti,
  ]);
  expect(await counterValue('backchannel_logout_deliveries_total', { client: 'flaky', outcome: 'retried' })).toBe(2);
  // The client has the token before the delivery's answer is counted: wait for the count.
  const deadline = Date.now() + 10_000;
  const delivered = () =>
    counterValue('backchannel_logout_deliveries_total', { client: 'flaky', outcome: 'delivered' });
  while ((await delivered()) === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  expect(await delivered()).toBe(1);
  const gaveUp = () => counterValue('backchannel_logout_deliveries_total', { client: 'refusing', outcome: 'gave-up' });
  while ((await gaveUp()) === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
  expect(await gaveUp()).toBe(1);
  expect(received.filter((r) => r.path === '/refusing/logout')).toEqual([]);
  expect(
    logEntries.some(
      (entry) =>
        entry.message.includes('Back-channel logout not delivered') &&
        entry.meta?.clientId === 'refusing' &&
        entry.meta?.reason === 'answered 400',
    ),
  ).toBe(true);
});

test('the admin API takes only a logout URI the service may post to, and the client no longer reports it as unsupported', async () => {
  const refused = async (uri: string) =>
    h.admin('PUT', '/api/v1/clients/odd', {
      AllowedGrantTypes: ['authorization_code'],
      RedirectUris: [CALLBACK],
      AllowedScopes: ['openid'],
      ClientSecrets: [{ Value: CLIENT_SECRET }],
      BackChannelLogoutUri: uri,
    });
  const relative = await refused('/signout-oidc');
  expect(relative.status).toBe(400);
  expect(JSON.stringify(relative.body)).toContain('BackChannelLogoutUri');
  const internal = await refused('http://localhost:1/signout-oidc');
  expect(internal.status).toBe(400);
  expect(JSON.stringify(internal.body)).toContain('Auth:AllowedInternalTargets');

  const shop = await h.admin('GET', '/api/v1/clients/shop');
  expect(shop.body).toMatchObject({ BackChannelLogoutUri: logoutUri('shop') });
  expect(shop.body.unsupportedSettings).toEqual([]);

  const discovery = await (await fetch(`${h.api.publicUrl}/.well-known/openid-configuration`)).json();
  expect(discovery).toMatchObject({ backchannel_logout_supported: true, backchannel_logout_session_supported: true });
});

test('an unused browser with no session signs out without telling anyone', async () => {
  const before = received.length;
  const page = browser(CALLBACK);
  const answer = await page.open(`${h.api.url}/connect/endsession`);
  expect(answer).not.toBeInstanceOf(URL);
  await new Promise((resolve) => setTimeout(resolve, 500));
  expect(received.length).toBe(before);
});
