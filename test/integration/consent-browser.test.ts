import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import * as oidc from 'openid-client';
import type { BrowserContext, Page } from 'playwright-core';
import { logger } from '../../platform/observability/logger';
import { SCREENSHOTS, useBrowserClient } from '../support/chromium';
import { SIGN_IN_HARNESS, UNLIMITED_SIGN_IN, createUserWith, useHarness } from '../support/harness';
import { authorizationRequest, publicClient, relyingParty } from '../support/relying-party';
import { totp } from '../support/totp';

// Issue 41, items 1, 2, 5 and 6, as a person meets them in Chromium at desktop and phone widths: consent that shows
// what is asked and remembers a decision when told to (IdentityServer's RequireConsent / AllowRememberConsent),
// "Signed in as … — not you?", pages that always lead on, the two-step pages, and plain words with a reference.
const h = useHarness({
  ...SIGN_IN_HARNESS,
  config: { ...SIGN_IN_HARNESS.config, Auth: { ...UNLIMITED_SIGN_IN, Lockout: { MaxFailedAttempts: 5, Minutes: 1 } } },
});
const PASSWORD = 'a long passphrase 7';
const SHOTS = process.env.SCREENSHOT_DIR ?? join(SCREENSHOTS, 'consent');
const app = useBrowserClient(h, { id: 'plain-app', name: 'Plain app', scopes: ['openid', 'profile', 'email'] });

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  for (const [id, name, extra] of [
    ['consent-app', 'Demo Web App', { ClientUri: 'https://demo.example.test/' }],
    ['always-ask-app', 'Always-ask app', { AllowRememberConsent: false }],
    ['offline-app', 'Offline app', { AllowOfflineAccess: true }],
  ] as const) {
    const put = await h.admin('PUT', `/api/v1/clients/${id}`, {
      ClientName: name,
      ...publicClient(app.callback, ['openid', 'profile', 'email']),
      RequireConsent: true,
      ...extra,
    });
    expect(put.status).toBe(201);
  }
});

const contexts: BrowserContext[] = [];
afterAll(() => Promise.all(contexts.map((c) => c.close())));

/** A new browser (no cookies) at phone width. */
async function newBrowser(): Promise<Page> {
  const context = await app.browser.newContext({ viewport: { width: 390, height: 844 } });
  contexts.push(context);
  return context.newPage();
}

/** Screenshots at desktop and phone width (looked at: /tmp/shots-h5); at 390 px nothing scrolls sideways. */
async function seen(page: Page, name: string): Promise<void> {
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.screenshot({ path: join(SHOTS, `${name}-desktop.png`), fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: join(SHOTS, `${name}-390.png`), fullPage: true });
  expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390);
}

const h1 = (page: Page) => page.locator('h1').textContent();

/** Opens an authorization request of `clientId` and answers with where it ends up after `steps`. */
async function authorize(page: Page, clientId: string, scope = 'openid profile') {
  const rp = await relyingParty(h.api.publicUrl, clientId);
  const { url, verifier } = await authorizationRequest(rp, { redirect_uri: app.callback, scope });
  await page.goto(url);
  return { rp, verifier };
}

async function signIn(page: Page, email: string) {
  await page.fill('input[name=email]', email);
  await page.click('button[type=submit]');
  await page.fill('input[name=password]', PASSWORD);
  await page.click('button[type=submit]');
}

const backInTheApp = (page: Page) => page.waitForURL(`${app.callback}?**`);

describe('consent', () => {
  test('shows every scope asked for, remembers the decision only when told, asks again for more scopes and after a withdrawal', async () => {
    const user = await createUserWith(h, 'consent', PASSWORD);
    // A first session: the page names the app, the user and what is asked, by display name.
    const first = await newBrowser();
    await authorize(first, 'consent-app');
    await signIn(first, user.email);
    await expect(h1(first)).resolves.toBe('Allow access?');
    await expect(first.locator('.whoami').textContent()).resolves.toContain(`Signed in as ${user.email}`);
    await expect(first.locator('ul.scopes li strong').allTextContents()).resolves.toEqual([
      'Your user identifier',
      'User profile',
    ]);
    await expect(first.locator('input[name=remember]').isChecked()).resolves.toBe(true);
    await seen(first, '01-consent');
    // Not remembered: the next session asks again.
    await first.uncheck('input[name=remember]');
    await Promise.all([backInTheApp(first), first.click('button:text-is("Allow")')]);

    const second = await newBrowser();
    await authorize(second, 'consent-app');
    await signIn(second, user.email);
    await expect(h1(second)).resolves.toBe('Allow access?');
    await Promise.all([backInTheApp(second), second.click('button:text-is("Allow")')]);

    // Remembered: a third session goes straight back to the app, with a code that redeems.
    const third = await newBrowser();
    const { rp, verifier } = await authorize(third, 'consent-app');
    await signIn(third, user.email);
    await backInTheApp(third);
    const tokens = await oidc.authorizationCodeGrant(rp, new URL(third.url()), { pkceCodeVerifier: verifier });
    expect(tokens.claims()?.sub).toBe(user.id);

    // The browser is signed in; the app asks for more: the page lists everything asked for, not an empty list.
    await authorize(third, 'consent-app', 'openid profile email');
    await expect(h1(third)).resolves.toBe('Allow access?');
    await expect(third.locator('ul.scopes li').count()).resolves.toBe(3);
    await expect(third.locator('ul.scopes').textContent()).resolves.toContain('profile');
    await seen(third, '02-consent-signed-in-more-scopes');
    await Promise.all([backInTheApp(third), third.click('button:text-is("Allow")')]);

    // The account page lists the remembered consent; withdrawn, the next session asks again.
    await third.goto(`${h.api.url}/account`);
    await expect(third.locator('h2', { hasText: 'Applications you allowed' }).count()).resolves.toBe(1);
    await expect(third.locator('body').textContent()).resolves.toContain('Demo Web App');
    await seen(third, '03-account-consents');
    await expect(third.locator('body').textContent()).resolves.toContain('Does not ask for your consent again.');
    await third.click('button:text-is("Remove access")');
    await expect(third.locator('[role=status]').textContent()).resolves.toContain('Access removed');
    await expect(third.locator('text=Applications you allowed').count()).resolves.toBe(0);
    const fourth = await newBrowser();
    await authorize(fourth, 'consent-app');
    await signIn(fourth, user.email);
    await expect(h1(fourth)).resolves.toBe('Allow access?');
  }, 120_000);

  test('a signed-in browser asked again (offline_access: prompt=consent) sees every scope, not an empty list', async () => {
    const user = await createUserWith(h, 'offline', PASSWORD);
    const page = await newBrowser();
    await authorize(page, 'offline-app', 'openid profile offline_access');
    await signIn(page, user.email);
    await expect(page.locator('ul.scopes li').count()).resolves.toBe(3);
    await Promise.all([backInTheApp(page), page.click('button:text-is("Allow")')]);
    // Signed in, the grant holding every scope already: Duende asks again for offline_access, and shows all of it.
    await authorize(page, 'offline-app', 'openid profile offline_access');
    await expect(h1(page)).resolves.toBe('Allow access?');
    await expect(page.locator('ul.scopes li').count()).resolves.toBe(3);
    await seen(page, '02b-consent-signed-in-offline');
  }, 60_000);

  test('"Remove access" ends what an application holds, as Duende\'s grants page does: its refresh token stops working', async () => {
    const user = await createUserWith(h, 'remove-access', PASSWORD);
    const page = await newBrowser();
    const { rp, verifier } = await authorize(page, 'offline-app', 'openid profile offline_access');
    await signIn(page, user.email);
    // Not remembered: the application is listed for its refresh token alone.
    await page.uncheck('input[name=remember]');
    await Promise.all([backInTheApp(page), page.click('button:text-is("Allow")')]);
    const tokens = await oidc.authorizationCodeGrant(rp, new URL(page.url()), { pkceCodeVerifier: verifier });
    expect(tokens.refresh_token).toBeTruthy();

    await page.goto(`${h.api.url}/account`);
    const applications = page.locator('table[aria-labelledby=applications-heading] tr');
    const listed = applications.filter({ hasText: 'Offline app' });
    await expect(listed.textContent()).resolves.toContain('Keeps access while you are away.');
    await expect(listed.textContent()).resolves.not.toContain('Does not ask for your consent again.');
    await seen(page, '03b-account-offline-access');
    await listed.locator('button:text-is("Remove access")').click();
    await expect(page.locator('[role=status]').textContent()).resolves.toContain('Access removed');
    await expect(listed.count()).resolves.toBe(0);
    await expect(oidc.refreshTokenGrant(rp, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    // This browser stays signed in (the account page answered), and the application asks for consent again.
    await authorize(page, 'offline-app', 'openid profile offline_access');
    await expect(h1(page)).resolves.toBe('Allow access?');
  }, 60_000);

  test('a client without AllowRememberConsent asks every time and offers no "remember"', async () => {
    const user = await createUserWith(h, 'always-ask', PASSWORD);
    for (let round = 0; round < 2; round++) {
      const page = await newBrowser();
      await authorize(page, 'always-ask-app');
      await signIn(page, user.email);
      await expect(h1(page)).resolves.toBe('Allow access?');
      await expect(page.locator('input[name=remember]').count()).resolves.toBe(0);
      await Promise.all([backInTheApp(page), page.click('button:text-is("Allow")')]);
    }
  }, 60_000);

  test('"not you?" on the consent page signs out and starts the sign-in of the same app again', async () => {
    const user = await createUserWith(h, 'not-me', PASSWORD);
    const page = await newBrowser();
    await authorize(page, 'always-ask-app');
    await signIn(page, user.email);
    await page.click('text=Not you?');
    await expect(h1(page)).resolves.toBe('Sign in');
    await expect(page.locator('body').textContent()).resolves.toContain('Always-ask app');
    // The session is gone: the account page signs in first.
    const account = await page.context().newPage();
    await account.goto(`${h.api.url}/account`);
    await expect(h1(account)).resolves.toBe('Sign in');
  }, 60_000);
});

describe('no dead ends', () => {
  test('/ is a page for a person and a JSON 404 for an API client', async () => {
    const page = await newBrowser();
    const answer = await page.goto(`${h.api.url}/`);
    expect(answer!.status()).toBe(200);
    await expect(page.locator('a', { hasText: 'Manage your account' }).getAttribute('href')).resolves.toBe('/account');
    await seen(page, '04-home');
    const api = await fetch(`${h.api.url}/`, { headers: { accept: 'application/json' } });
    expect(api.status).toBe(404);
    expect(api.headers.get('content-type')).toContain('application/problem+json');
  });

  test('/account without a session signs in through its own client and comes back; "not you?" signs out', async () => {
    const user = await createUserWith(h, 'account-entry', PASSWORD);
    const page = await newBrowser();
    await page.goto(`${h.api.url}/account`);
    await expect(h1(page)).resolves.toBe('Sign in');
    await expect(page.locator('body').textContent()).resolves.toContain('Identity account');
    await signIn(page, user.email);
    await page.waitForURL(`${h.api.url}/account`);
    await expect(h1(page)).resolves.toBe('Your account');
    await expect(page.locator('.whoami').textContent()).resolves.toContain(user.email);
    await seen(page, '05-account-after-own-sign-in');
    await page.click('text=Not you?');
    await expect(h1(page)).resolves.toBe('Sign in');
    await page.goto(`${h.api.url}/account`);
    await expect(h1(page)).resolves.toBe('Sign in');
    // A return this browser did not start is a page that leads to a new sign-in, not a redirect loop.
    await page.goto(`${h.api.url}/account/signed-in?code=x&state=forged`);
    await expect(page.locator('a.onward').getAttribute('href')).resolves.toBe('/account');
  }, 60_000);

  test('"Check your e-mail" leads back to the sign-in; expired links and sign-ins lead to the account', async () => {
    const page = await newBrowser();
    await authorize(page, 'plain-app');
    const signInUrl = page.url();
    await page.fill('input[name=email]', 'someone@example.test');
    await page.click('button[type=submit]');
    await page.click('text=Forgot your password?');
    await page.click('button[type=submit]');
    await expect(h1(page)).resolves.toBe('Check your e-mail');
    await seen(page, '06-check-your-email');
    await page.click('text=Back to sign-in');
    expect(page.url()).toBe(signInUrl);
    await expect(h1(page)).resolves.toBe('Sign in');

    await page.goto(`${h.api.url}/account/reset-password?token=not-a-token`);
    await expect(h1(page)).resolves.toBe('This link no longer works');
    await expect(page.locator('body').textContent()).resolves.not.toContain('older than it may be');
    await expect(page.locator('a', { hasText: 'Go to your account' }).count()).resolves.toBe(1);
    await seen(page, '07-link-expired');

    await page.goto(`${h.api.url}/account/confirm-email?token=not-a-token`);
    await expect(page.locator('a.onward').getAttribute('href')).resolves.toBe('/account');

    await page.goto(`${h.api.url}/interaction/no-such-sign-in`);
    await expect(h1(page)).resolves.toBe('This sign-in has expired');
    await expect(page.locator('a.onward').getAttribute('href')).resolves.toBe('/account');
    await seen(page, '08-sign-in-expired');
  }, 60_000);
});

describe('two-step pages', () => {
  test('one password field for two changes, a number pad for codes and a keyboard for recovery codes, ids that break between words', async () => {
    const user = await createUserWith(h, 'two-step', PASSWORD);
    const page = await newBrowser();
    await page.goto(`${h.api.url}/account/mfa`);
    await signIn(page, user.email);
    await page.waitForURL(`${h.api.url}/account/mfa`);
    const key = (await page.locator('.key').textContent())!.replace(/\s/g, '');
    await page.fill('input[name=code]', totp(key, Math.floor(Date.now() / 30_000)));
    await page.click('button[type=submit]');
    await expect(h1(page)).resolves.toBe('Two-step verification is on');
    const codes = await page.locator('.codes li').allTextContents();

    await page.goto(`${h.api.url}/account/mfa`);
    await expect(h1(page)).resolves.toBe('Two-step verification');
    await expect(page.locator('input[type=password]').count()).resolves.toBe(1);
    await seen(page, '09-mfa-settings');

    // A new browser: the code step, and a recovery code through its own field.
    const other = await newBrowser();
    await authorize(other, 'plain-app');
    await signIn(other, user.email);
    await expect(h1(other)).resolves.toBe('Two-step verification');
    await expect(other.locator('#code').getAttribute('inputmode')).resolves.toBe('numeric');
    await other.click('text=Use a recovery code');
    await expect(other.locator('#recovery-code').getAttribute('inputmode')).resolves.toBe('text');
    await seen(other, '10-code-and-recovery-code');
    await other.fill('#recovery-code', codes[0]);
    await Promise.all([backInTheApp(other), other.click('text=Verify the recovery code')]);

    // The sessions list: an application's name or id wraps as a whole, not in the middle.
    await other.goto(`${h.api.url}/account`);
    await expect(other.locator('.session .client', { hasText: 'Plain app' }).count()).resolves.toBeGreaterThan(0);
    for (const client of await other.locator('.session .client').all()) {
      const box = (await client.boundingBox())!;
      const lineHeight = await client.evaluate((el) => parseFloat(getComputedStyle(el).lineHeight));
      expect(box.height).toBeLessThan(lineHeight * 1.5);
    }
    await seen(other, '11-account-sessions');
    // No page of the account says "two-step sign-in": one wording everywhere.
    await expect(other.locator('body').textContent()).resolves.not.toMatch(/two-step sign-in/i);
  }, 90_000);
});

describe('words for people', () => {
  test('an unknown client shows plain words and a reference; the detail is in the log line with that reference', async () => {
    const warn = jest.spyOn(logger, 'warn');
    try {
      const page = await newBrowser();
      await page.goto(
        `${h.api.url}/connect/authorize?client_id=no-such-app&response_type=code&scope=openid&redirect_uri=${encodeURIComponent(app.callback)}`,
      );
      const text = (await page.locator('body').textContent())!;
      expect(text).not.toContain('/api/v1/clients');
      expect(text).not.toContain('client_id');
      const reference = (await page.locator('.reference .key').textContent())!;
      expect(reference).toMatch(/^[0-9A-F]{8}$/);
      await expect(page.locator('a.onward').getAttribute('href')).resolves.toBe('/account');
      await seen(page, '12-unknown-client');
      const line = warn.mock.calls.find((call) => JSON.stringify(call).includes(reference));
      expect(JSON.stringify(line)).toContain('GET /api/v1/clients/{clientId}');
    } finally {
      warn.mockRestore();
    }
  });

  test('a wrong redirect of a known client leads back to its ClientUri', async () => {
    const page = await newBrowser();
    await page.goto(
      `${h.api.url}/connect/authorize?client_id=consent-app&response_type=code&scope=openid&redirect_uri=${encodeURIComponent('https://elsewhere.example.test/cb')}`,
    );
    await expect(page.locator('a.onward').getAttribute('href')).resolves.toBe('https://demo.example.test/');
    await expect(page.locator('a.onward').textContent()).resolves.toBe('Back to Demo Web App');
  });

  test('a lockout of one minute says "1 minute"', async () => {
    const user = await createUserWith(h, 'one-minute', PASSWORD);
    const page = await newBrowser();
    await authorize(page, 'plain-app');
    await page.fill('input[name=email]', user.email);
    await page.click('button[type=submit]');
    await page.fill('input[name=password]', 'not my password');
    await page.click('button[type=submit]');
    await expect(page.locator('[role=alert]').textContent()).resolves.toBe(
      'The e-mail or password is not right. After 5 failed attempts an account is locked for 1 minute.',
    );
  });
});
