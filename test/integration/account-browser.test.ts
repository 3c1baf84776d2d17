import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { SCREENSHOTS, useBrowserClient } from '../support/chromium';
import { useHarness, UNLIMITED_SIGN_IN } from '../support/harness';
import { authorizationRequest, relyingParty } from '../support/relying-party';
import { smtpTo, useMailCatcher } from '../support/smtp';
import { totp } from '../support/totp';

// A person in a real browser (Chromium) on a phone (390×844) and on a laptop (1280×800): forgetting the password and
// setting a new one from the mailed link, then turning two-step verification on and keeping the recovery codes. The pages
// carry the configured brand. Screenshots of each page land in test-output/screenshots (account-*.png).
const catcher = useMailCatcher();
const h = useHarness(() => ({
  apps: {},
  config: {
    Email: smtpTo(catcher()),
    SignIn: { ProductName: 'Acme Identity' },
    Auth: { ...UNLIMITED_SIGN_IN },
  },
}));
const PASSWORD = 'a long passphrase 7';
const NEW_PASSWORD = 'another long passphrase 8';
const accountApp = useBrowserClient(h, { id: 'account-app', name: 'Account app', scopes: ['openid', 'profile'] });

const SCREENS = [
  { name: 'phone', viewport: { width: 390, height: 844 } },
  { name: 'laptop', viewport: { width: 1280, height: 800 } },
] as const;

for (const screen of SCREENS) {
  test(`on a ${screen.name} (${screen.viewport.width}×${screen.viewport.height}): a password reset from the mailed link, then enrolment with recovery codes`, async () => {
    // A long address, as people have: it must wrap on a phone, not push the page sideways.
    const email = `firstname.middlename.lastname.${randomUUID().slice(0, 6)}@subsidiary.example-corporation.test`;
    expect((await h.admin('POST', '/api/v1/profile/', { email, password: PASSWORD })).status).toBe(201);
    const context = await accountApp.browser.newContext({ viewport: screen.viewport, deviceScaleFactor: 2 });
    const page = await context.newPage();
    const seen = async (step: string) => {
      await page.screenshot({ path: join(SCREENSHOTS, `account-${screen.name}-${step}.png`), fullPage: true });
      expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(
        screen.viewport.width,
      );
      expect(await page.title()).toMatch(/ · Acme Identity$/);
    };
    const rp = await relyingParty(h.api.publicUrl, 'account-app');
    const signInPage = async () => {
      const { url } = await authorizationRequest(rp, { redirect_uri: accountApp.callback, scope: 'openid profile' });
      await page.goto(url);
      await page.fill('#email', email);
      await page.click('button[type=submit]');
    };

    // Forgot the password: the link on the password page, the form, the mail, the link in it, a new password.
    await signInPage();
    await seen('1-password');
    await page.click('text=Forgot your password?');
    expect(await page.inputValue('#email')).toBe(email);
    await seen('2-forgot');
    await page.click('button[type=submit]');
    await page.waitForSelector('text=Check your e-mail');
    await seen('3-sent');
    const sent = await catcher().next(email);
    const link = sent.links[0];
    // The mail as a mail program shows its HTML part: one column, the link as a button.
    const reader = await context.newPage();
    await reader.setContent(sent.html);
    await reader.screenshot({ path: join(SCREENSHOTS, `account-${screen.name}-mail.png`), fullPage: true });
    expect(await reader.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(
      screen.viewport.width,
    );
    expect(await reader.getAttribute('a', 'href')).toBe(link);
    await reader.close();
    await page.goto(link);
    await seen('4-new-password');
    await page.fill('#password', NEW_PASSWORD);
    await page.fill('#confirm', NEW_PASSWORD);
    await page.click('button[type=submit]');
    await page.waitForSelector('text=Your password is changed');
    await seen('5-changed');

    // Signed in with the new password, then the account page and enrolment.
    await signInPage();
    await page.fill('#password', NEW_PASSWORD);
    await page.click('button[type=submit]');
    await page.waitForURL(`${accountApp.callback}**`);
    await page.goto(`${h.api.publicUrl}/account`);
    await seen('6-account');
    await page.click('text=Turn two-step verification on');
    await seen('7-enrol');
    const key = (await page.textContent('.key'))!.replace(/\s/g, '');
    await page.fill('#code', totp(key));
    await page.click('button[type=submit]');
    await page.waitForSelector('text=Keep these recovery codes somewhere safe');
    const codes = await page.$$eval('.codes li', (items) => items.map((li) => li.textContent));
    expect(codes).toHaveLength(10);
    await seen('8-recovery-codes');
    await context.close();
  });
}
