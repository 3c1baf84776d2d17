import { randomBytes, randomUUID } from 'node:crypto';
import * as oidc from 'openid-client';
import { createUserWith, useHarness, SIGN_IN_HARNESS, type Harness } from '../support/harness';
import { codeFlow } from '../support/code-flow';
import { confidentialClient, publicClient, relyingParty } from '../support/relying-party';
import { decodeJwt } from 'jose';
import { browser, CookieJar, textOf, type Visit } from '../support/sign-in-flow';
import { counterValue } from '../support/metrics';
import { newSourceKey, SOURCE_APPLICATION_NAME, type SourceKey } from '../support/source-protection';
import {
  newSourceSessionId,
  protectTicket,
  SOURCE_COOKIE,
  sourceCookies,
  sourceTicket,
  type SourceSignInFixture,
} from '../support/source-cookies';
import { keyXml } from '../../platform/security/aspnet-data-protection';
import { keepSourceKeyRing } from '../../platform/store/source-key-ring';
import { deactivateUserReturningApps } from '../../platform/store/user-removals';
import { logger } from '../../platform/observability/logger';
import { sourceSessionCarrier } from '../../sign-in/oidc/source-sessions';
import { mkdirSync } from 'node:fs';
import { useBrowserClient } from '../support/chromium';

// Issue 40 part 3: a browser signed in at the source (its ASP.NET Core Identity cookie, protected with the source's
// Data Protection key ring) is signed in here with no page while Migration:SourceSessions:Until is ahead. The cookies
// are built from the published formats (TicketSerializer, PropertiesSerializer, ChunkingCookieManager) and the ring
// is the one the migration keeps sealed in the store: no source is connected.
const KEY: SourceKey = newSourceKey();
const h = useHarness(
  {
    ...SIGN_IN_HARNESS,
    config: {
      ...SIGN_IN_HARNESS.config,
      Migration: {
        SourceSessions: { Until: new Date(Date.now() + 3_600_000).toISOString() },
        SourceDataProtection: { ApplicationName: SOURCE_APPLICATION_NAME },
      },
    },
  },
  async (started: Harness) => {
    const day = 86_400_000;
    const xml = keyXml({ ...KEY, created: new Date(Date.now() - day), expires: new Date(Date.now() + 80 * day) });
    await keepSourceKeyRing(started.context.db, started.context.dataProtection!, [{ name: `key-${KEY.id}.xml`, xml }]);
  },
);

const PASSWORD = 'correct horse battery 9';
const CALLBACK = 'https://apps.example.com/source-sessions/cb';
const CLIENT = 'source-sessions-app';
const flow = codeFlow(CALLBACK);
let rp: oidc.Configuration;
/** A client with refresh tokens and an API scope, so its access tokens are JWTs whose claims the test reads. */
const API_CLIENT = 'source-sessions-api-app';
const API_CLIENT_SECRET = 'source-sessions-api-secret';
let apiRp: oidc.Configuration;
const webApp = useBrowserClient(h, { id: 'source-sessions-web', name: 'Web app', scopes: ['openid', 'profile'] });
const SHOTS = '/tmp/shots-h3';

beforeAll(async () => {
  const answer = await h.admin('PUT', `/api/v1/clients/${CLIENT}`, publicClient(CALLBACK, ['openid', 'profile']));
  expect(answer.status).toBe(201);
  rp = await relyingParty(h.api.publicUrl, CLIENT);
  const api = confidentialClient(CALLBACK, ['openid', 'profile', 'IdentityAdmin'], API_CLIENT_SECRET);
  expect((await h.admin('PUT', `/api/v1/clients/${API_CLIENT}`, api)).status).toBe(201);
  apiRp = await relyingParty(h.api.publicUrl, API_CLIENT, API_CLIENT_SECRET);
});

/** A user here as the migration leaves one: the source's id and security stamp. */
async function migratedUser(label: string) {
  const user = await createUserWith(h, label, PASSWORD);
  const stamp = randomUUID().toUpperCase();
  await h.context.db.updateTable('users').set({ security_stamp: stamp }).where('id', '=', user.id).execute();
  return { userId: user.id, email: user.email, stamp, sessionId: newSourceSessionId() };
}

/** A browser holding these cookies for the service's host (the source ran under the same host name). */
function browserWith(cookies: Record<string, string>) {
  const jar = new CookieJar();
  for (const [name, value] of Object.entries(cookies)) jar.set(h.api.publicUrl, name, value);
  return jar;
}

/** An authorization of the app in the browser with this jar: what it came to, and what the code exchange needs. */
async function authorize(jar: CookieJar, extra: Record<string, string> = {}, app = rp) {
  const state = oidc.randomState();
  const verifier = oidc.randomPKCECodeVerifier();
  const url = oidc.buildAuthorizationUrl(app, {
    redirect_uri: CALLBACK,
    scope: 'openid profile',
    state,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    ...extra,
  });
  const page = browser(CALLBACK, jar);
  const answer = await page.open(url.href);
  return { started: { page, first: answer, verifier, state, uid: '' }, answer };
}

/** prompt=none in a browser with these cookies: the code's tokens, or the error the app was sent back with. */
async function silently(cookies: Record<string, string>) {
  const jar = browserWith(cookies);
  const { started, answer } = await authorize(jar, { prompt: 'none' });
  if (!(answer instanceof URL)) throw new Error(`a page was shown (${answer.status}): ${answer.url}`);
  const error = answer.searchParams.get('error');
  if (error) return { error, description: answer.searchParams.get('error_description'), jar };
  return { tokens: await flow.tokens(rp, started, answer), jar };
}

describe('a source sign-in that holds', () => {
  test('prompt=none gets a code; the ID token carries the source session id as sid and its auth_time', async () => {
    const user = await migratedUser('carried');
    const authTime = Math.floor(Date.now() / 1000) - 3600;
    const before = await counterValue('source_sessions_total', { outcome: 'carried-over' });
    const { tokens, jar } = await silently(sourceCookies({ ...user, authTime }, KEY));
    const claims = tokens!.claims()!;
    expect(claims.sub).toBe(user.userId);
    expect(claims.sid).toBe(user.sessionId);
    expect(claims.auth_time).toBe(authTime);
    expect(claims.amr).toEqual(['pwd']);
    expect(await counterValue('source_sessions_total', { outcome: 'carried-over' })).toBe(before + 1);
    const audit = await h.context.db
      .selectFrom('audit_events')
      .select(['client_id', 'detail'])
      .where('type', '=', 'source-session-carried-over')
      .where('user_id', '=', user.userId)
      .execute();
    expect(audit).toEqual([{ client_id: CLIENT, detail: { idp: 'local', sessionId: user.sessionId } }]);
    // The session names the source's sid for the client: back-channel logout sends the sid the client holds.
    const sessions = await h.context.db
      .selectFrom('oidc_payloads')
      .select('payload')
      .where('model', '=', 'Session')
      .where((eb) => eb.fn('jsonb_extract_path_text', [eb.ref('payload'), eb.val('accountId')]), '=', user.userId)
      .execute();
    expect(sessions).toHaveLength(1);
    expect(sessions[0].payload).toMatchObject({ authorizations: { [CLIENT]: { sid: user.sessionId } } });

    // The service's own session now stands without the source cookie.
    const withoutSource = new CookieJar();
    for (const pair of jar.header(h.api.publicUrl).split('; ')) {
      const [name, ...rest] = pair.split('=');
      if (name !== SOURCE_COOKIE) withoutSource.set(h.api.publicUrl, name, rest.join('='));
    }
    const again = await authorize(withoutSource, { prompt: 'none' });
    expect(again.answer).toBeInstanceOf(URL);
    const code = (again.answer as URL).searchParams;
    expect(code.get('error')).toBeNull();
    const second = await flow.tokens(rp, again.started, again.answer);
    expect(second.claims()!.sid).toBe(user.sessionId);
  });

  test("another app of the same browser later gets the same sid: every client holds the source's", async () => {
    const other = 'source-sessions-other';
    const put = await h.admin('PUT', `/api/v1/clients/${other}`, publicClient(CALLBACK, ['openid', 'profile']));
    expect(put.status).toBe(201);
    const otherRp = await relyingParty(h.api.publicUrl, other);
    const user = await migratedUser('two-apps');
    const { jar } = await silently(sourceCookies(user, KEY));
    // The browser still holds the source cookie: the service's session gains the source's sid for this client too.
    const { started, answer } = await authorize(jar, { prompt: 'none' }, otherRp);
    const tokens = await flow.tokens(otherRp, started, answer);
    expect(tokens.claims()).toMatchObject({ sub: user.userId, aud: other, sid: user.sessionId });
  });

  test("signing out here deletes the source's cookie too: the next authorization does not sign the browser in again", async () => {
    const user = await migratedUser('signed-out');
    const cookies = sourceCookies(user, KEY, 200);
    const { tokens, jar } = await silently(cookies);
    const page = browser(CALLBACK, jar);
    // A valid hint: the page's script presses "Continue" (logout=yes) at once, as a browser runs it.
    const hint = new URLSearchParams({ id_token_hint: tokens!.id_token! });
    const confirm = (await page.open(`${h.api.url}/connect/endsession?${hint.toString()}`)) as Visit;
    const action = /<form id="op.logoutForm" method="post" action="([^"]+)">/.exec(confirm.html)![1];
    const xsrf = /name="xsrf" value="([^"]+)"/.exec(confirm.html)![1];
    expect(jar.header(h.api.url)).toContain(`${SOURCE_COOKIE}=`);
    const signedOut = await page.post(action, { xsrf, logout: 'yes' });
    expect(textOf(signedOut)).toMatch(/signed out/i);
    for (const name of Object.keys(cookies)) expect(jar.header(h.api.url)).not.toContain(`${name}=`);
    const again = await authorize(jar, { prompt: 'none' });
    expect((again.answer as URL).searchParams.get('error')).toBe('login_required');
  });

  test('a chunked cookie (chunks-N with C1..CN) carries over too', async () => {
    const user = await migratedUser('chunked');
    const cookies = sourceCookies(user, KEY, 200);
    expect(cookies[SOURCE_COOKIE]).toMatch(/^chunks-\d+$/);
    const { tokens } = await silently(cookies);
    expect(tokens!.claims()!.sid).toBe(user.sessionId);
  });

  test('a sign-in page opened with the cookie goes back to the app with a code, no page shown', async () => {
    const user = await migratedUser('page');
    // The authorization begins without the cookie (the page is shown) and the page is opened with it.
    const started = await flow.start(rp, 'openid profile');
    expect(started.first).not.toBeInstanceOf(URL);
    for (const [name, value] of Object.entries(sourceCookies(user, KEY)))
      started.page.jar.set(h.api.publicUrl, name, value);
    const answer = await started.page.open((started.first as Visit).url);
    const tokens = await flow.tokens(rp, started, answer);
    expect(tokens.claims()!.sub).toBe(user.userId);
    expect(tokens.claims()!.sid).toBe(user.sessionId);
  });

  test('the cookie never reaches the log', async () => {
    const lines: string[] = [];
    const spies = (['info', 'warn', 'error'] as const).map((level) =>
      jest.spyOn(logger, level).mockImplementation((...args: unknown[]) => lines.push(JSON.stringify(args))),
    );
    try {
      const user = await migratedUser('logged');
      const good = sourceCookies(user, KEY);
      await silently(good);
      const bad = sourceCookies({ ...user, stamp: 'OTHER' }, KEY);
      await silently(bad);
      expect(lines.join('\n')).toContain('stamp-changed');
      for (const value of [...Object.values(good), ...Object.values(bad)])
        expect(lines.join('\n')).not.toContain(value.slice(0, 40));
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });
});

describe("the source's idp is the session's", () => {
  /**
   * The API client's authorization with offline_access (no prompt=none, which drops offline_access in oidc-provider):
   * no page is shown, and the code's tokens are an ID token, a JWT access token and a refresh token.
   */
  async function apiTokens(fixture: SourceSignInFixture) {
    const jar = browserWith(sourceCookies(fixture, KEY));
    const { started, answer } = await authorize(jar, { scope: 'openid profile offline_access IdentityAdmin' }, apiRp);
    if (!(answer instanceof URL)) throw new Error(`a page was shown (${answer.status}): ${answer.url}`);
    expect(answer.searchParams.get('error')).toBeNull();
    return flow.tokens(apiRp, started, answer);
  }

  test('an external sign-in at the source ("Google"): ID token, access token and refreshed tokens say "Google"', async () => {
    const user = await migratedUser('carried-google');
    const tokens = await apiTokens({ ...user, idp: 'Google', amr: ['external'] });
    expect(tokens.claims()).toMatchObject({ idp: 'Google', amr: ['external'] });
    expect(decodeJwt(tokens.access_token)).toMatchObject({ idp: 'Google', amr: ['external'], sub: user.userId });
    expect(tokens.refresh_token).toBeDefined();

    const refreshed = await oidc.refreshTokenGrant(apiRp, tokens.refresh_token!);
    expect(decodeJwt(refreshed.access_token)).toMatchObject({ idp: 'Google', amr: ['external'] });
    expect(refreshed.claims()).toMatchObject({ idp: 'Google' });
    // The rotated refresh token keeps it too.
    const again = await oidc.refreshTokenGrant(apiRp, refreshed.refresh_token ?? tokens.refresh_token!);
    expect(decodeJwt(again.access_token)).toMatchObject({ idp: 'Google' });
  });

  test('a sign-in at the service\'s own pages in that browser replaces it: "local" again', async () => {
    const user = await migratedUser('carried-then-local');
    const jar = browserWith(sourceCookies({ ...user, idp: 'Google', amr: ['external'] }, KEY));
    const scope = 'openid profile IdentityAdmin';
    const carried = await authorize(jar, { prompt: 'none', scope }, apiRp);
    expect(carried.answer).toBeInstanceOf(URL);
    const own = new CookieJar();
    for (const pair of jar.header(h.api.publicUrl).split('; ')) {
      const [name, ...rest] = pair.split('=');
      if (name !== SOURCE_COOKIE) own.set(h.api.publicUrl, name, rest.join('='));
    }
    const { started } = await authorize(own, { prompt: 'login', scope }, apiRp);
    const tokens = await flow.tokens(apiRp, started, await flow.signIn(started, user.email, PASSWORD));
    expect(tokens.claims()).toMatchObject({ sub: user.userId, idp: 'local', amr: ['pwd'] });
    expect(decodeJwt(tokens.access_token)).toMatchObject({ idp: 'local' });
  });

  test('a local sign-in at the source stays "local"', async () => {
    const user = await migratedUser('carried-local');
    const tokens = await apiTokens({ ...user, idp: 'local', amr: ['pwd'] });
    expect(tokens.claims()).toMatchObject({ idp: 'local', amr: ['pwd'] });
    expect(decodeJwt(tokens.access_token)).toMatchObject({ idp: 'local' });
  });

  // Such a value is normalised, not refused: the ticket passed Data Protection and the sign-in is sound; only the
  // name is not one the service puts in tokens, so the session says "external" (the user signed in elsewhere).
  test.each([
    ['over-long', 'x'.repeat(257)],
    ['control characters', 'Goo\u0000gle\r\n'],
    ['empty', ''],
  ])('an idp that is no provider name (%s) becomes "external"', async (_label, idp) => {
    const user = await migratedUser(`carried-bad-idp-${_label.replace(/ /g, '-')}`);
    const tokens = await apiTokens({ ...user, idp, amr: ['external'] });
    expect(tokens.claims()).toMatchObject({ idp: 'external' });
    expect(decodeJwt(tokens.access_token)).toMatchObject({ idp: 'external' });
  });
});

describe('anything else is as if there were no cookie', () => {
  const otherKey = newSourceKey();
  type Case = [string, string, () => Promise<Record<string, string>>];
  const cookieFor = async (change: Partial<SourceSignInFixture>, key = KEY) =>
    sourceCookies({ ...(await migratedUser('refused')), ...change }, key);
  const cases: Case[] = [
    ['expired', 'expired', () => cookieFor({ expires: new Date(Date.now() - 1000) })],
    ['another stamp', 'stamp-changed', () => cookieFor({ stamp: randomUUID().toUpperCase() })],
    ['another key ring', 'unknown-key', () => cookieFor({}, otherKey)],
    [
      'another application name',
      'unreadable',
      async () => ({
        [SOURCE_COOKIE]: protectTicket(sourceTicket(await migratedUser('other-app')), KEY, '/srv/another-app'),
      }),
    ],
    [
      'tampered',
      'unreadable',
      async () => {
        const value = protectTicket(sourceTicket(await migratedUser('tampered')), KEY);
        const at = Math.floor(value.length / 2);
        return { [SOURCE_COOKIE]: value.slice(0, at) + (value[at] === 'A' ? 'B' : 'A') + value.slice(at + 1) };
      },
    ],
    ['not a ticket', 'not-a-ticket', async () => ({ [SOURCE_COOKIE]: protectTicket(randomBytes(64), KEY) })],
    ['not protected at all', 'unreadable', async () => ({ [SOURCE_COOKIE]: 'CfDJ8%%%not-base64' })],
    ['an unknown user', 'unknown-user', () => cookieFor({ userId: randomUUID() })],
    [
      'a deleted user',
      'unknown-user',
      async () => {
        const user = await migratedUser('deleted');
        expect((await h.admin('DELETE', `/api/v1/profile/${user.userId}`)).status).toBeLessThan(300);
        return sourceCookies(user, KEY);
      },
    ],
    [
      'a deactivated user',
      'tombstoned',
      async () => {
        const user = await migratedUser('deactivated');
        await deactivateUserReturningApps(h.context.db, user.userId);
        return sourceCookies(user, KEY);
      },
    ],
  ];

  test.each(cases)('%s: login_required for prompt=none, the sign-in page otherwise', async (_label, outcome, make) => {
    const cookies = await make();
    const before = await counterValue('source_sessions_total', { outcome });
    expect((await silently(cookies)).error).toBe('login_required');
    expect(await counterValue('source_sessions_total', { outcome })).toBe(before + 1);
    const { answer } = await authorize(browserWith(cookies));
    expect(answer).not.toBeInstanceOf(URL);
    expect((answer as Visit).status).toBe(200);
    expect((answer as Visit).url).toContain('/interaction/');
  });
});

describe('a stamp changed here ends the source cookie', () => {
  test.each([
    ['an admin ends the sessions', (id: string) => h.admin('DELETE', `/api/v1/profile/${id}/sessions`)],
    ['an admin removes the second factor', (id: string) => h.admin('DELETE', `/api/v1/profile/${id}/mfa`)],
  ])('%s', async (_label, change) => {
    const user = await migratedUser('stamp');
    const cookies = sourceCookies(user, KEY);
    expect((await silently(cookies)).tokens).toBeDefined();
    expect((await change(user.userId)).status).toBe(204);
    const before = await counterValue('source_sessions_total', { outcome: 'stamp-changed' });
    expect((await silently(cookies)).error).toBe('login_required');
    expect(await counterValue('source_sessions_total', { outcome: 'stamp-changed' })).toBe(before + 1);
  });

  test('a password change on the account page', async () => {
    const user = await migratedUser('password');
    const cookies = sourceCookies(user, KEY);
    // Signed in at the service (password), the user changes the password: every other sign-in ends.
    const started = await flow.start(rp, 'openid profile');
    await flow.signIn(started, user.email, PASSWORD);
    const account = await started.page.open(`${h.api.publicUrl}/account`);
    expect((account as Visit).status).toBe(200);
    const changed = await started.page.submit('/account/password', {
      current: PASSWORD,
      password: 'another horse battery 10',
      confirm: 'another horse battery 10',
    });
    expect(textOf(changed)).toContain('Your password is changed');
    const before = await counterValue('source_sessions_total', { outcome: 'stamp-changed' });
    expect((await silently(cookies)).error).toBe('login_required');
    expect(await counterValue('source_sessions_total', { outcome: 'stamp-changed' })).toBe(before + 1);
  });
});

test('after Until the cookie is not even read', async () => {
  const carry = sourceSessionCarrier({
    db: h.context.db,
    ring: h.context.dataProtection!,
    config: {
      ...h.config,
      Migration: {
        ...h.config.Migration,
        SourceSessions: { ...h.config.Migration.SourceSessions, Until: new Date(Date.now() - 1000) },
      },
    },
  });
  const user = await migratedUser('late');
  const req = { headers: { cookie: `${SOURCE_COOKIE}=${sourceCookies(user, KEY)[SOURCE_COOKIE]}` } };
  const seen = await counterValue('source_sessions_total', {});
  expect(await carry(undefined as never, req as never, undefined as never, { clientId: CLIENT })).toBe(false);
  // Not read, not counted: a cookie that were read would be counted whatever came of it.
  expect(await counterValue('source_sessions_total', {})).toBe(seen);
});

test('a real browser with the source cookie on the host: the app gets its code, no page shown', async () => {
  const user = await migratedUser('browser');
  const context = await webApp.browser.newContext();
  const host = new URL(h.api.publicUrl).hostname;
  await context.addCookies(
    Object.entries(sourceCookies(user, KEY)).map(([name, value]) => ({
      name,
      value,
      domain: host,
      path: '/',
      httpOnly: true,
    })),
  );
  const page = await context.newPage();
  const visited: string[] = [];
  page.on('framenavigated', (frame) => visited.push(frame.url()));
  const web = await relyingParty(h.api.publicUrl, 'source-sessions-web');
  const verifier = oidc.randomPKCECodeVerifier();
  const url = oidc.buildAuthorizationUrl(web, {
    redirect_uri: webApp.callback,
    scope: 'openid profile',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  await page.goto(url.href);
  await page.waitForURL(`${webApp.callback}?**`);
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: `${SHOTS}/source-session-carried-over.png` });
  await expect(page.locator('h1').textContent()).resolves.toBe('Back in the app');
  expect(visited.filter((v) => v.includes('/interaction/'))).toEqual([]);
  const tokens = await oidc.authorizationCodeGrant(web, new URL(page.url()), { pkceCodeVerifier: verifier });
  expect(tokens.claims()).toMatchObject({ sub: user.userId, sid: user.sessionId });
  await context.close();
});
