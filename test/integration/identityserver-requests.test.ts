import { join } from 'node:path';
import * as oidc from 'openid-client';
import type { Page } from 'playwright-core';
import { SCREENSHOTS, useBrowserClient } from '../support/chromium';
import { SIGN_IN_HARNESS, uniqueEmail, useHarness } from '../support/harness';
import { authorizationRequest, relyingParty } from '../support/relying-party';

// Issue 41, item 13: requests answered as Duende IdentityServer answers them. An unknown scope is `invalid_scope`
// (DefaultResourceValidator), at /connect/authorize back at the client's redirect URI, and at the token endpoint for
// every grant that names scopes; so is offline_access from a client without AllowOfflineAccess; a sign-out carrying a valid id_token_hint of the signed-in user needs no question
// (LogoutRequest.ShowSignoutPrompt), one without such a hint still asks. The clients are openid-client; the sign-outs
// run in Chromium.
const h = useHarness({ ...SIGN_IN_HARNESS, allowedInternalTargets: ['127.0.0.1'] });
const PASSWORD = 'correct horse battery 9';
const SECRET = 'scopes-client-secret-16';
const app = useBrowserClient(h, { id: 'tidy-app', name: 'Tidy app', scopes: ['openid', 'profile'] });
const signedOutAt = () => app.callback.replace('/callback', '/signed-out');

beforeAll(async () => {
  // The browser client again, now with its post-logout address.
  const put = await h.admin('PUT', '/api/v1/clients/tidy-app', {
    ClientName: 'Tidy app',
    RequireClientSecret: false,
    AllowedGrantTypes: ['authorization_code'],
    RedirectUris: [app.callback],
    PostLogoutRedirectUris: [signedOutAt()],
    AllowedScopes: ['openid', 'profile'],
  });
  expect(put.status).toBe(200);
  const web = await h.admin('PUT', '/api/v1/clients/scoped-web', {
    AllowedGrantTypes: ['authorization_code'],
    RedirectUris: [app.callback],
    AllowedScopes: ['openid', 'profile'],
    AllowOfflineAccess: true,
    ClientSecrets: [{ Value: SECRET }],
  });
  expect(web.status).toBe(201);
  const machine = await h.admin('PUT', '/api/v1/clients/scoped-machine', {
    AllowedGrantTypes: ['client_credentials'],
    AllowedScopes: ['orders.read'],
    ClientSecrets: [{ Value: SECRET }],
  });
  expect(machine.status).toBe(201);
  const tv = await h.admin('PUT', '/api/v1/clients/scoped-tv', {
    RequireClientSecret: false,
    AllowedGrantTypes: ['urn:ietf:params:oauth:grant-type:device_code'],
    AllowedScopes: ['openid', 'profile'],
  });
  expect(tv.status).toBe(201);
  const legacy = await h.admin('PUT', '/api/v1/clients/scoped-legacy', {
    AllowedGrantTypes: ['client_credentials'],
    AllowedScopes: ['openid', 'profile'],
    ClientSecrets: [{ Value: SECRET }],
  });
  expect(legacy.status).toBe(201);
  // As the migration writes a client that had the password grant at IdentityServer (the admin API never adds it).
  await h.context.db
    .updateTable('clients')
    .set({ grant_types: JSON.stringify(['password']), origin: 'migration' })
    .where('client_id', '=', 'scoped-legacy')
    .execute();
}, 60_000);

async function newUser(label: string) {
  const email = uniqueEmail(label);
  expect((await h.admin('POST', '/api/v1/profile/', { email, password: PASSWORD })).status).toBe(201);
  return email;
}

/**
 * An authorization asking for `scope`, which must go back to the client's redirect URI as `invalid_scope` with its
 * state (an OAuth error, not a page): the error's description.
 */
async function invalidScopeAtAuthorize(rp: oidc.Configuration, scope: string): Promise<string> {
  const state = oidc.randomState();
  const { url } = await authorizationRequest(rp, { redirect_uri: app.callback, scope, state });
  const answer = await fetch(url, { redirect: 'manual' });
  expect(answer.status).toBe(303);
  const back = new URL(answer.headers.get('location')!);
  expect(back.origin + back.pathname).toBe(app.callback);
  expect(back.searchParams.get('error')).toBe('invalid_scope');
  expect(back.searchParams.get('state')).toBe(state);
  return back.searchParams.get('error_description') ?? '';
}

describe('an unknown scope is invalid_scope', () => {
  test('at /connect/authorize it goes back to the client as an OAuth error, with its state', async () => {
    const rp = await relyingParty(h.api.publicUrl, 'tidy-app');
    expect(await invalidScopeAtAuthorize(rp, 'openid profile nonsense.read')).toContain('nonsense.read');

    // The known scopes alone are taken: the sign-in page.
    const state = oidc.randomState();
    const known = await authorizationRequest(rp, { redirect_uri: app.callback, scope: 'openid profile', state });
    const page = await fetch(known.url, { redirect: 'manual' });
    expect(page.headers.get('location')).toMatch(/\/interaction\//);
  });

  test('at the token endpoint: client credentials, device authorization and the password grant', async () => {
    const machine = await relyingParty(h.api.publicUrl, 'scoped-machine', SECRET);
    await expect(oidc.clientCredentialsGrant(machine, { scope: 'orders.read nonsense.write' })).rejects.toMatchObject({
      error: 'invalid_scope',
    });
    await expect(oidc.clientCredentialsGrant(machine, { scope: 'orders.read' })).resolves.toMatchObject({
      token_type: expect.stringMatching(/^bearer$/i),
    });

    const tv = await relyingParty(h.api.publicUrl, 'scoped-tv');
    await expect(oidc.initiateDeviceAuthorization(tv, { scope: 'openid nonsense' })).rejects.toMatchObject({
      error: 'invalid_scope',
    });
    await expect(oidc.initiateDeviceAuthorization(tv, { scope: 'openid profile' })).resolves.toMatchObject({
      user_code: expect.any(String),
    });

    const email = await newUser('scoped-password');
    const legacy = await relyingParty(h.api.publicUrl, 'scoped-legacy', SECRET);
    await expect(
      oidc.genericGrantRequest(legacy, 'password', { username: email, password: PASSWORD, scope: 'openid nonsense' }),
    ).rejects.toMatchObject({ error: 'invalid_scope' });
    await expect(
      oidc.genericGrantRequest(legacy, 'password', { username: email, password: PASSWORD, scope: 'openid profile' }),
    ).resolves.toMatchObject({ scope: 'openid profile' });
  });

  test('at the token endpoint: a refresh naming a scope the refresh token does not hold', async () => {
    const web = await relyingParty(h.api.publicUrl, 'scoped-web', SECRET);
    const page = await (await app.browser.newContext()).newPage();
    const { refreshToken } = await signIn(page, await newUser('scoped-refresh'), web, 'openid offline_access');
    await expect(oidc.refreshTokenGrant(web, refreshToken!, { scope: 'openid nonsense' })).rejects.toMatchObject({
      error: 'invalid_scope',
    });
    await expect(oidc.refreshTokenGrant(web, refreshToken!, { scope: 'openid' })).resolves.toMatchObject({
      id_token: expect.any(String),
    });
  });
});

// Duende's DefaultResourceValidator puts offline_access into InvalidScopes for a client without AllowOfflineAccess;
// oidc-provider would drop it without a word, and the client would wonder where its refresh token went.
describe('offline_access from a client without AllowOfflineAccess is invalid_scope', () => {
  test('at /connect/authorize back at the client, at device authorization and for the password grant', async () => {
    const rp = await relyingParty(h.api.publicUrl, 'tidy-app');
    expect(await invalidScopeAtAuthorize(rp, 'openid offline_access')).toContain('AllowOfflineAccess');

    const tv = await relyingParty(h.api.publicUrl, 'scoped-tv');
    await expect(oidc.initiateDeviceAuthorization(tv, { scope: 'openid offline_access' })).rejects.toMatchObject({
      error: 'invalid_scope',
    });

    const email = await newUser('scoped-offline');
    const legacy = await relyingParty(h.api.publicUrl, 'scoped-legacy', SECRET);
    await expect(
      oidc.genericGrantRequest(legacy, 'password', {
        username: email,
        password: PASSWORD,
        scope: 'openid offline_access',
      }),
    ).rejects.toMatchObject({ error: 'invalid_scope' });
  });

  test('a client with AllowOfflineAccess gets its refresh token for it', async () => {
    const web = await relyingParty(h.api.publicUrl, 'scoped-web', SECRET);
    const page = await (await app.browser.newContext()).newPage();
    const { refreshToken } = await signIn(page, await newUser('scoped-offline-ok'), web, 'openid offline_access');
    expect(refreshToken).toEqual(expect.any(String));
  });
});

/** Signs a user in to a client (tidy-app unless `rp` says otherwise) in the page's browser: its tokens. */
async function signIn(page: Page, email: string, rp?: oidc.Configuration, scope = 'openid') {
  rp ??= await relyingParty(h.api.publicUrl, 'tidy-app');
  const state = oidc.randomState();
  const { url, verifier } = await authorizationRequest(rp, { redirect_uri: app.callback, scope, state });
  await page.goto(url);
  await page.fill('input[name=email]', email);
  await page.click('button[type=submit]');
  await page.fill('input[name=password]', PASSWORD);
  await Promise.all([page.waitForURL(`${app.callback}?**`), page.click('button[type=submit]')]);
  const tokens = await oidc.authorizationCodeGrant(rp, new URL(page.url()), {
    pkceCodeVerifier: verifier,
    expectedState: state,
  });
  return { rp, idToken: tokens.id_token!, refreshToken: tokens.refresh_token };
}

/** Whether the page's browser is still signed in: an authorization goes straight back to the client. */
async function stillSignedIn(page: Page, rp: oidc.Configuration): Promise<boolean> {
  const { url } = await authorizationRequest(rp, { redirect_uri: app.callback, scope: 'openid' });
  await page.goto(url);
  return page.url().startsWith(app.callback);
}

async function shot(page: Page, name: string) {
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

describe('sign-out at /connect/endsession', () => {
  test('with a valid id_token_hint of the signed-in user and a registered post-logout address: no question', async () => {
    const page = await (await app.browser.newContext()).newPage();
    const { rp, idToken } = await signIn(page, await newUser('tidy-hint'));
    const end = oidc.buildEndSessionUrl(rp, {
      id_token_hint: idToken,
      post_logout_redirect_uri: signedOutAt(),
      state: 'after-sign-out',
    });
    await page.goto(end.href);
    await page.waitForURL(`${signedOutAt()}?**`);
    expect(new URL(page.url()).searchParams.get('state')).toBe('after-sign-out');
    await expect(page.locator('h1').textContent()).resolves.toBe('Back in the app');
    await shot(page, 'end-session-01-no-question');
    expect(await stillSignedIn(page, rp)).toBe(false);
    await expect(page.locator('h1').textContent()).resolves.toBe('Sign in');
  });

  test('without script, the page that asks nothing offers one button that signs out', async () => {
    const page = await (await app.browser.newContext({ javaScriptEnabled: false })).newPage();
    const { rp, idToken } = await signIn(page, await newUser('tidy-no-script'));
    await page.goto(
      oidc.buildEndSessionUrl(rp, { id_token_hint: idToken, post_logout_redirect_uri: signedOutAt() }).href,
    );
    await expect(page.locator('h1').textContent()).resolves.toBe('Signing out');
    await expect(page.locator('form#op\\.logoutForm input[name=xsrf]').getAttribute('value')).resolves.toMatch(/.+/);
    await shot(page, 'end-session-04-signing-out-without-script');
    await Promise.all([page.waitForURL(`${signedOutAt()}**`), page.click('button[name=logout][value=yes]')]);
    expect(await stillSignedIn(page, rp)).toBe(false);
  });

  test('without a hint the question is asked, and "Yes, sign me out" signs out', async () => {
    const page = await (await app.browser.newContext()).newPage();
    const { rp } = await signIn(page, await newUser('tidy-no-hint'));
    await page.goto(oidc.buildEndSessionUrl(rp, {}).href);
    await expect(page.locator('h1').textContent()).resolves.toBe('Sign out?');
    // The question's form keeps oidc-provider's anti-forgery field.
    await expect(page.locator('form#op\\.logoutForm input[name=xsrf]').getAttribute('value')).resolves.toMatch(/.+/);
    await shot(page, 'end-session-02-question');
    expect(await stillSignedIn(page, rp)).toBe(true);

    await page.goto(oidc.buildEndSessionUrl(rp, {}).href);
    await page.click('button[name=logout][value=yes]');
    await expect(page.locator('h1').textContent()).resolves.toBe('Signed out');
    expect(await stillSignedIn(page, rp)).toBe(false);
  });

  test("another page holding some user's valid ID token cannot sign this browser out without the question", async () => {
    // The attack the question exists for: a page the user visits sends the browser to /connect/endsession with an
    // ID token of its own (valid, issued to a registered client, with a registered post-logout address).
    const attacker = await (await app.browser.newContext()).newPage();
    const { rp, idToken: attackersToken } = await signIn(attacker, await newUser('tidy-attacker'));
    const victim = await (await app.browser.newContext()).newPage();
    await signIn(victim, await newUser('tidy-victim'));

    await victim.goto(
      oidc.buildEndSessionUrl(rp, { id_token_hint: attackersToken, post_logout_redirect_uri: signedOutAt() }).href,
    );
    await expect(victim.locator('h1').textContent()).resolves.toBe('Sign out?');
    await shot(victim, 'end-session-03-foreign-hint');
    expect(await stillSignedIn(victim, rp)).toBe(true);
  });
});
