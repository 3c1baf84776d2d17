import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { SCREENSHOTS, useBrowserClient } from '../support/chromium';
import { useHarness, UNLIMITED_SIGN_IN } from '../support/harness';
import { authorizationRequest, relyingParty } from '../support/relying-party';
import { smtpTo, useMailCatcher } from '../support/smtp';
import { totp } from '../support/totp';

// Issue 41 items 3 and 4 in a real browser (Chromium) on a phone (390×844) and a laptop (1280×800): a person creates
// an account from the sign-in page of an application and lands back in it, then uses the account page: the other
// device's session ended alone, the name, the password (its confirmation in view), the address (confirmed by the link
// mailed to the new one), and the recovery codes copied and downloaded. Screenshots in SHOTS_DIR (or
// test-output/screenshots), self-service-*.png.
const SHOTS = process.env.SHOTS_DIR ?? SCREENSHOTS;
const catcher = useMailCatcher();
const h = useHarness(() => ({
  apps: { crm: {} },
  config: {
    Email: smtpTo(catcher()),
    SignIn: { ProductName: 'Acme Identity' },
    Auth: { ...UNLIMITED_SIGN_IN },
  },
}));
const PASSWORD = 'a long passphrase 7';
const NEW_PASSWORD = 'another long passphrase 8';
const app = useBrowserClient(h, { id: 'self-service-app', name: 'Acme Portal', scopes: ['openid', 'profile'] });

const SCREENS = [
  { name: 'phone', viewport: { width: 390, height: 844 } },
  { name: 'laptop', viewport: { width: 1280, height: 800 } },
] as const;

beforeAll(() => mkdirSync(SHOTS, { recursive: true }));

for (const screen of SCREENS) {
  describe(`on a ${screen.name} (${screen.viewport.width}×${screen.viewport.height})`, () => {
    let context: BrowserContext;
    let page: Page;
    const seen = async (step: string, on = page) => {
      await on.screenshot({ path: join(SHOTS, `self-service-${screen.name}-${step}.png`), fullPage: true });
      expect(await on.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(
        screen.viewport.width,
      );
      expect(await on.title()).toMatch(/ · Acme Identity$/);
    };
    const openSignIn = async (on: Page) => {
      const rp = await relyingParty(h.api.publicUrl, 'self-service-app');
      const { url } = await authorizationRequest(rp, { redirect_uri: app.callback, scope: 'openid profile' });
      await on.goto(url);
    };
    // A long address, as people have: it must wrap on a phone, not push the page sideways.
    const email = `firstname.middlename.lastname.${randomUUID().slice(0, 6)}@subsidiary.example-corporation.test`;

    beforeAll(async () => {
      context = await app.browser.newContext({
        viewport: screen.viewport,
        deviceScaleFactor: 2,
        acceptDownloads: true,
      });
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: h.api.publicUrl });
      page = await context.newPage();
    });
    afterAll(() => context.close());

    test('"Create an account" from the sign-in page: a refusal in plain words, then the account and back to the app', async () => {
      await openSignIn(page);
      await seen('1-email-page');
      await page.click('text=Create an account');
      await page.fill('#email', email);
      await page.fill('#firstName', 'Ada');
      await page.fill('#password', 'short');
      await page.fill('#confirm', 'short');
      await page.click('button:has-text("Create the account")');
      await page.waitForSelector('.error');
      expect(await page.textContent('.error')).toContain('The password must be at least');
      await seen('2-sign-up-policy');

      h.apps.crm.state.behaviour = { rejectWith: 'our seats are all taken this month' };
      await page.fill('#password', PASSWORD);
      await page.fill('#confirm', PASSWORD);
      await page.click('button:has-text("Create the account")');
      await page.waitForSelector('text=Your account was not created');
      expect(await page.textContent('.error')).toBe('crm did not accept it: our seats are all taken this month');
      await seen('3-sign-up-refused');
      h.apps.crm.state.behaviour = {};

      await openSignIn(page);
      await page.click('text=Create an account');
      await seen('4-sign-up-form');
      await page.fill('#email', email);
      await page.fill('#firstName', 'Ada');
      await page.fill('#lastName', 'Lovelace');
      await page.fill('#password', PASSWORD);
      await page.fill('#confirm', PASSWORD);
      await page.click('button:has-text("Create the account")');
      await page.waitForURL(`${app.callback}**`);
      expect(await page.textContent('h1')).toBe('Back in the app');
    });

    test('the account page: sessions by device and app, one ended; name, password and address changed', async () => {
      // Another device of the same person: its own browser context (its own cookies), signed in with the password.
      const other = await app.browser.newContext({
        viewport: screen.viewport,
        userAgent:
          'Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1',
      });
      const phone = await other.newPage();
      await openSignIn(phone);
      await phone.fill('#email', email);
      await phone.click('button[type=submit]');
      await phone.fill('#password', PASSWORD);
      await phone.click('button[type=submit]');
      await phone.waitForURL(`${app.callback}**`);

      await page.goto(`${h.api.publicUrl}/account`);
      const sessions = page.locator('.session');
      expect(await sessions.count()).toBe(2);
      expect(await sessions.nth(0).textContent()).toMatch(/Safari on iPhone · 127\.0\.0\.1[\s\S]*Acme Portal/);
      expect(await sessions.nth(1).textContent()).toMatch(/Chrome on Linux · 127\.0\.0\.1[\s\S]*Acme Portal/);
      expect(await sessions.nth(1).textContent()).toContain('This browser');
      expect(await page.inputValue('#firstName')).toBe('Ada');
      await seen('5-account');

      await page.click('button:has-text("End this session")');
      await page.waitForSelector('text=The session is ended');
      expect(await page.locator('.session').count()).toBe(1);
      await seen('6-session-ended');
      await phone.goto(`${h.api.publicUrl}/account`);
      // Its session ended, the other device's account page starts its own sign-in.
      expect(await phone.textContent('h1')).toBe('Sign in');
      expect(await phone.textContent('main')).toMatch(/to continue to .* account/);
      await other.close();

      await page.fill('#firstName', 'Augusta Ada');
      await page.click('button:has-text("Save the name")');
      await page.waitForSelector('text=Your name is saved.');
      expect(await page.inputValue('#firstName')).toBe('Augusta Ada');

      await page.fill('#current', PASSWORD);
      await page.fill('#password', NEW_PASSWORD);
      await page.fill('#confirm', NEW_PASSWORD);
      await page.click('button:has-text("Change the password")');
      const notice = page.locator('.notice');
      await notice.waitFor();
      expect(await notice.textContent()).toContain('Your password is changed');
      // In view where the person is looking when the page comes back: above the fold, not below the forms.
      const box = (await notice.boundingBox())!;
      expect(box.y + box.height).toBeLessThan(screen.viewport.height);
      await page.screenshot({ path: join(SHOTS, `self-service-${screen.name}-7-password-changed-view.png`) });
      await seen('7-password-changed');

      const moved = `moved.${randomUUID().slice(0, 6)}@example-corporation.test`;
      await page.fill('#new-email', moved);
      await page.fill('#email-password', NEW_PASSWORD);
      await page.click('button:has-text("Change the e-mail address")');
      await page.waitForSelector('text=Check your new mailbox');
      await seen('8-address-link-sent');
      const link = (await catcher().next(moved)).links[0];
      await page.goto(link);
      await page.waitForSelector('text=Your e-mail address is changed');
      await seen('9-address-changed');
      // The old address also has the password-change mail, which may come in late: wait for this one by its subject.
      let told = catcher()
        .to(email)
        .find((m) => /^Your e-mail address was changed/.test(m.subject));
      for (let i = 0; i < 100 && !told; i++) {
        await new Promise((r) => setTimeout(r, 100));
        told = catcher()
          .to(email)
          .find((m) => /^Your e-mail address was changed/.test(m.subject));
      }
      if (!told) throw new Error(`no address-change notice to ${email}`);
      const reader = await context.newPage();
      await reader.setContent(told.html);
      await reader.screenshot({
        path: join(SHOTS, `self-service-${screen.name}-mail-old-address.png`),
        fullPage: true,
      });
      await reader.close();
      await page.click('text=Back to your account');
      expect(await page.textContent('.who')).toBe(moved);
    });

    test('recovery codes: a copy button puts them on the clipboard, a link downloads them as a text file', async () => {
      await page.goto(`${h.api.publicUrl}/account/mfa`);
      if (await page.locator('#password').count()) {
        await page.fill('#password', NEW_PASSWORD);
        await page.click('button[type=submit]');
      }
      const key = (await page.textContent('.key'))!.replace(/\s/g, '');
      await page.fill('#code', totp(key));
      await page.click('button:has-text("Turn on")');
      await page.waitForSelector('text=Keep these recovery codes somewhere safe');
      const codes = await page.$$eval('.codes li', (items) => items.map((li) => li.textContent));
      expect(codes).toHaveLength(10);

      await page.click('button:has-text("Copy the codes")');
      await page.waitForSelector('text=Copied. Paste them into your password manager.');
      expect((await page.evaluate<string>('navigator.clipboard.readText()')).split('\n')).toEqual(codes);
      await seen('10-recovery-codes');

      const [download] = await Promise.all([page.waitForEvent('download'), page.click('text=Download as a text file')]);
      expect(download.suggestedFilename()).toBe('recovery-codes.txt');
      const file = readFileSync(await download.path(), 'utf8');
      for (const code of codes) expect(file).toContain(code);
      expect(file).toContain('Acme Identity recovery codes');
    });
  });
}
