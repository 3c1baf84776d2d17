import { createHmac, randomUUID } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { closeServer, listen, listeningUrl } from '../../platform/net/listen';
import { base32Decode } from '../../platform/security/base32';
import { stopAfterAll, useHarness } from '../support/harness';
import { authorizationRequest, relyingParty } from '../support/relying-party';
import { startMailCatcher, type MailCatcher } from '../support/smtp';

// A person in a real browser (Chromium) on a phone (390×844) and on a laptop (1280×800): forgetting the password and
// setting a new one from the mailed link, then turning two-step sign-in on and keeping the recovery codes. The pages
// carry the configured brand. Screenshots of each page land in test-output/screenshots (account-*.png).
let mail: MailCatcher;
beforeAll(async () => {
  mail = await startMailCatcher();
});
const h = useHarness(() => ({
  apps: {},
  config: {
    Email: { Smtp: { Host: '127.0.0.1', Port: mail.port } },
    SignIn: { ProductName: 'Acme Identity' },
    Auth: { SignInRateLimit: { PermitLimit: 100_000, WindowSeconds: 60 } },
  },
}));
const SCREENSHOTS = join(__dirname, '..', '..', 'test-output', 'screenshots');
const PASSWORD = 'a long passphrase 7';
const NEW_PASSWORD = 'another long passphrase 8';

function totp(base32: string, step = Math.floor(Date.now() / 30_000)): string {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const mac = createHmac('sha1', base32Decode(base32)).update(counter).digest();
  const offset = mac[mac.length - 1] & 0xf;
  return String((mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000).padStart(6, '0');
}

let browser: Browser;
let app: Server;
let callback: string;

beforeAll(async () => {
  mkdirSync(SCREENSHOTS, { recursive: true });
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
  });
  app = createServer((_req, res) =>
    res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Back in the app</h1>'),
  );
  await listen(app, 0, '127.0.0.1', 'test app', 'port');
  callback = `${listeningUrl(app, '127.0.0.1')}/callback`;
  const put = await h.admin('PUT', '/api/v1/clients/account-app', {
    ClientName: 'Account app',
    RequireClientSecret: false,
    AllowedGrantTypes: ['authorization_code'],
    RedirectUris: [callback],
    AllowedScopes: ['openid', 'profile'],
  });
  expect(put.status).toBe(201);
}, 60_000);

stopAfterAll(() => [browser, app && { close: () => closeServer(app) }, mail]);

const SCREENS = [
  { name: 'phone', viewport: { width: 390, height: 844 } },
  { name: 'laptop', viewport: { width: 1280, height: 800 } },
] as const;

for (const screen of SCREENS) {
  test(`on a ${screen.name} (${screen.viewport.width}×${screen.viewport.height}): a password reset from the mailed link, then enrolment with recovery codes`, async () => {
    // A long address, as people have: it must wrap on a phone, not push the page sideways.
    const email = `firstname.middlename.lastname.${randomUUID().slice(0, 6)}@subsidiary.example-corporation.test`;
    expect((await h.admin('POST', '/api/v1/profile/', { email, password: PASSWORD })).status).toBe(201);
    const context = await browser.newContext({ viewport: screen.viewport, deviceScaleFactor: 2 });
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
      const { url } = await authorizationRequest(rp, { redirect_uri: callback, scope: 'openid profile' });
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
    const sent = await mail.next(email);
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
    await page.waitForURL(`${callback}**`);
    await page.goto(`${h.api.publicUrl}/account`);
    await seen('6-account');
    await page.click('text=Turn two-step sign-in on');
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
