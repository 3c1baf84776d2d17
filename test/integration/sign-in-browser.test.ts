import { join } from 'node:path';
import * as oidc from 'openid-client';
import type { Page } from 'playwright-core';
import { SCREENSHOTS, useBrowserClient } from '../support/chromium';
import { findUserIdByEmail } from '../../platform/store/users';
import { stopAfterAll, uniqueEmail, useHarness } from '../support/harness';
import { authorizationRequest, relyingParty } from '../support/relying-party';
import { globexProvider, startUpstreamProvider, type UpstreamProvider } from '../support/upstream-provider';
import { totp } from '../support/totp';

// A person on a phone: Chromium at 390×844 through the sign-in pages, authenticator enrolment, and a sign-in with the
// enrolled app. Screenshots of each page land in test-output/screenshots.
const h = useHarness({ apps: {}, allowedInternalTargets: ['127.0.0.1', '127.0.0.2'] });
const PASSWORD = 'a long passphrase 7';
const phoneApp = useBrowserClient(h, { id: 'phone-app', name: 'Phone app', scopes: ['openid', 'profile', 'email'] });
let upstream: UpstreamProvider | undefined;
stopAfterAll(() => [upstream]);

async function phone(): Promise<Page> {
  const context = await phoneApp.browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2 });
  return context.newPage();
}

/** Saves what the person sees and checks it fits the screen: no sideways scrolling. */
async function seen(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
  expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
}

async function authorize(page: Page, rp: oidc.Configuration) {
  const { url, verifier } = await authorizationRequest(rp, {
    redirect_uri: phoneApp.callback,
    scope: 'openid profile email',
  });
  await page.goto(url);
  return verifier;
}

test('sign-in, authenticator enrolment and a two-step verification in a real browser on a phone-sized screen', async () => {
  const email = uniqueEmail('phone');
  expect((await h.request('POST', '/api/auth/register', { email, password: PASSWORD, firstName: 'Pat' })).status).toBe(
    201,
  );
  const rp = await relyingParty(h.api.publicUrl, 'phone-app');

  const page = await phone();
  const verifier = await authorize(page, rp);
  await expect(page.locator('h1').textContent()).resolves.toBe('Sign in');
  await expect(page.locator('body').textContent()).resolves.toContain('Phone app');
  await seen(page, '01-email');
  await page.fill('input[name=email]', email);
  await page.click('button[type=submit]');
  await expect(page.locator('body').textContent()).resolves.toContain(email);
  await seen(page, '02-password');
  await page.fill('input[name=password]', 'not my password');
  await page.click('button[type=submit]');
  await expect(page.locator('[role=alert]').textContent()).resolves.toBe(
    'The e-mail or password is not right. After 5 failed attempts an account is locked for 15 minutes.',
  );
  await seen(page, '03-wrong-password');
  await page.fill('input[name=password]', PASSWORD);
  await Promise.all([page.waitForURL(`${phoneApp.callback}?**`), page.click('button[type=submit]')]);
  const tokens = await oidc.authorizationCodeGrant(rp, new URL(page.url()), { pkceCodeVerifier: verifier });
  expect(tokens.claims()).toMatchObject({ email, given_name: 'Pat' });

  // Signed in at the provider: the account page enrols an authenticator app.
  await page.goto(`${h.api.url}/account/mfa`);
  await expect(page.locator('img.qr').getAttribute('src')).resolves.toMatch(/^data:image\/png;base64,/);
  const key = (await page.locator('.key').textContent())!.replace(/\s/g, '');
  await seen(page, '04-mfa-enrol');
  await page.fill('input[name=code]', '000000' === totp(key, Math.floor(Date.now() / 30_000)) ? '111111' : '000000');
  await page.click('button[type=submit]');
  await expect(page.locator('[role=alert]').textContent()).resolves.toContain('That code is not right');
  await page.fill('input[name=code]', totp(key, Math.floor(Date.now() / 30_000)));
  await page.click('button[type=submit]');
  await expect(page.locator('h1').textContent()).resolves.toBe('Two-step verification is on');
  // Enrolment ends with the recovery codes, shown once.
  await expect(page.locator('.codes li').count()).resolves.toBe(10);
  await seen(page, '05-mfa-on');

  // A new device: password, then the code from the app (the next time step: the enrolment used this one).
  const other = await phone();
  const second = await authorize(other, rp);
  await other.fill('input[name=email]', email);
  await other.click('button[type=submit]');
  await other.fill('input[name=password]', PASSWORD);
  await other.click('button[type=submit]');
  await expect(other.locator('h1').textContent()).resolves.toBe('Two-step verification');
  await seen(other, '06-code');
  await other.fill('input[name=code]', totp(key, Math.floor(Date.now() / 30_000) + 1));
  await Promise.all([other.waitForURL(`${phoneApp.callback}?**`), other.click('button[type=submit]')]);
  const again = await oidc.authorizationCodeGrant(rp, new URL(other.url()), { pkceCodeVerifier: second });
  expect(again.claims()).toMatchObject({ email, amr: ['pwd', 'mfa'] });
}, 90_000);

test('the account page without a session starts a sign-in of its own', async () => {
  const page = await phone();
  await page.goto(`${h.api.url}/account/mfa`);
  await expect(page.locator('h1').textContent()).resolves.toBe('Sign in');
  await expect(page.locator('body').textContent()).resolves.toContain('to continue to Identity account');
  await seen(page, '07-account-signed-out');
});

test("home-realm discovery: an e-mail of a company's domain signs in at the company's provider and comes back", async () => {
  upstream = await startUpstreamProvider('127.0.0.2', `${h.api.publicUrl}/oidc/callback`);
  const created = await h.admin(
    'POST',
    '/api/v1/sso/oidc-providers',
    globexProvider(upstream, 'globex', 'globex.example'),
  );
  expect(created.status).toBe(201);
  const email = uniqueEmail('sam').replace('@example.test', '@globex.example');
  upstream.next = { sub: 'globex-sam', email, given_name: 'Sam', family_name: 'Vimes' };
  const rp = await relyingParty(h.api.publicUrl, 'phone-app');

  const page = await phone();
  const verifier = await authorize(page, rp);
  await page.fill('input[name=email]', email);
  await page.click('button[type=submit]');
  await expect(page.locator('h1').textContent()).resolves.toBe('Globex sign-in');
  expect(new URL(page.url()).hostname).toBe('127.0.0.2');
  await seen(page, '08-company-provider');
  await Promise.all([page.waitForURL(`${phoneApp.callback}?**`), page.click('button[type=submit]')]);
  await seen(page, '09-back-in-the-app');
  const tokens = await oidc.authorizationCodeGrant(rp, new URL(page.url()), { pkceCodeVerifier: verifier });
  const userId = await findUserIdByEmail(h.context.db, email);
  expect(tokens.claims()).toMatchObject({ sub: userId, email, given_name: 'Sam', amr: ['external'] });
}, 60_000);
