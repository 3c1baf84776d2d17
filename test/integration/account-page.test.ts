import { rowsWhere } from '../support/rows';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as oidc from 'openid-client';
import { accountPages } from '../support/account-pages';
import { logger } from '../../platform/observability/logger';
import { eventually, uniqueEmail, ownService, useHarness, createUserWith } from '../support/harness';
import { confidentialClient } from '../support/relying-party';
import { browser, textOf, type Visit } from '../support/sign-in-flow';
import { totp } from '../support/totp';

// The signed-in user's own account: the account page (password, sessions, "sign out everywhere"), two-step verification
// with recovery codes at enrolment, new codes and turning it off, each after the password. No SMTP server here: mail
// goes to the outbox folder, as under `npm start` without Email:Smtp:Host.
const outbox = mkdtempSync(join(tmpdir(), 'outbox-'));
const ADDRESS_LIMIT = 4;
const h = useHarness(
  ownService({
    Email: { OutboxPath: outbox },
    SignIn: { ProductName: 'Initech Sign-in', LogoUrl: '/static/initech.svg' },
    Auth: { PasswordReset: { AddressPermitLimit: ADDRESS_LIMIT, WindowMinutes: 15 } },
  }),
);

const CALLBACK = 'https://app.example.com/callback';
const PASSWORD = 'correct horse battery 9';

beforeAll(async () => {
  const client = await h.admin(
    'PUT',
    '/api/v1/clients/acct-web',
    confidentialClient(CALLBACK, ['openid', 'profile'], 'acct-web-secret-sixteen'),
  );
  expect(client.status).toBe(201);
}, 60_000);

const createUser = (label: string, extra: Record<string, unknown> = {}) => createUserWith(h, label, PASSWORD, extra);

const { signIn, account, enrol } = accountPages(
  h,
  { id: 'acct-web', secret: 'acct-web-secret-sixteen', callback: CALLBACK },
  PASSWORD,
);

test('the account page shows the address, two-step verification and where the user is signed in', async () => {
  const user = await createUser('acct-page');
  const first = await signIn(user.email);
  await signIn(user.email);
  const page = await account(first.page);
  expect(page.status).toBe(200);
  expect(textOf(page)).toContain(`Signed in as ${user.email}`);
  expect(textOf(page)).toContain('Two-step verification Off');
  expect(page.html.match(/Signed in \d{4}-/g)).toHaveLength(2);
  expect(textOf(page)).toContain('This browser');
  expect(textOf(page)).toContain('acct-web');
  // The configured brand: the title, and the logo above the product name.
  expect(page.html).toContain('<title>Your account · Initech Sign-in</title>');
  expect(page.html).toContain('<img src="/static/initech.svg" alt=""><span>Initech Sign-in</span>');
  // Without a session the account page starts its own sign-in.
  expect(textOf(await account(browser(CALLBACK)))).toMatch(/to continue to .* account/);
});

test('changing the password needs the current one and meets the policy; the new one signs in', async () => {
  const user = await createUser('acct-password');
  const { page } = await signIn(user.email);
  await account(page);
  const wrong = (await page.submit('/account/password', {
    current: 'not my password',
    password: 'another passphrase 1',
    confirm: 'another passphrase 1',
  })) as Visit;
  expect(wrong.status).toBe(400);
  expect(textOf(wrong)).toContain('Your current password is not right');
  const short = (await page.submit('/account/password', {
    current: PASSWORD,
    password: 'short',
    confirm: 'short',
  })) as Visit;
  expect(textOf(short)).toMatch(/The new password .*at least 8 characters/);
  const changed = (await page.submit('/account/password', {
    current: PASSWORD,
    password: 'another passphrase 1',
    confirm: 'another passphrase 1',
  })) as Visit;
  expect(textOf(changed)).toContain('Your password is changed');
  expect((await signIn(user.email, PASSWORD)).tokens).toBeUndefined();
  expect((await signIn(user.email, 'another passphrase 1')).tokens).toBeDefined();
});

test('"sign out everywhere" ends every session and refresh token, this browser too', async () => {
  const user = await createUser('acct-everywhere');
  const other = await signIn(user.email);
  const mine = await signIn(user.email);
  await account(mine.page);
  const done = (await mine.page.submit('/account/sessions/end', {})) as Visit;
  expect(textOf(done)).toContain('2 sign-ins ended');
  await expect(oidc.refreshTokenGrant(other.rp, other.tokens!.refresh_token!)).rejects.toMatchObject({
    error: 'invalid_grant',
  });
  // Without a session the account page starts its own sign-in.
  expect(textOf(await account(mine.page))).toMatch(/to continue to .* account/);
});

test('enrolment ends with 10 recovery codes shown once; each signs in once, typed in any case', async () => {
  const user = await createUser('acct-codes');
  const { page } = await signIn(user.email);
  const { key, done, codes } = await enrol(page);
  expect(textOf(done)).toContain('Keep these recovery codes somewhere safe');
  expect(codes).toHaveLength(10);
  expect(new Set(codes).size).toBe(10);
  // Stored as keyed hashes only.
  const stored = await rowsWhere(h.context.db, 'mfa_credentials', { user_id: user.id });
  expect(JSON.stringify(stored)).not.toContain(codes[0]);
  // Shown once: the page now manages two-step verification, without the codes.
  const settings = await account(page, '/mfa');
  expect(textOf(settings)).toContain('You have 10 unused recovery codes');
  expect(settings.html).not.toContain(codes[0]);

  expect((await signIn(user.email, PASSWORD, codes[0].toLowerCase())).tokens).toBeDefined();
  expect(textOf((await signIn(user.email, PASSWORD, codes[0])).answer as Visit)).toContain('not right');
  expect((await signIn(user.email, PASSWORD, totp(key, Math.floor(Date.now() / 30_000) + 1))).tokens).toBeDefined();
  const events = (await h.admin('GET', `/api/v1/audit-events?userId=${user.id}`)).body.events;
  expect(events.map((e: { type: string }) => e.type)).toEqual(
    expect.arrayContaining(['mfa-enrolled', 'recovery-code-used']),
  );
  expect(events.find((e: { type: string }) => e.type === 'recovery-code-used').detail).toEqual({ left: 9 });
});

test('new recovery codes and turning two-step verification off each need the password again', async () => {
  const user = await createUser('acct-mfa-off');
  const { page } = await signIn(user.email);
  const { key, codes } = await enrol(page);
  await account(page, '/mfa');
  const refused = (await page.submit('/account/mfa/recovery-codes', { password: 'not my password' })) as Visit;
  expect(refused.status).toBe(400);
  expect(textOf(refused)).toContain('That password is not right');
  const renewed = (await page.submit('/account/mfa/recovery-codes', { password: PASSWORD })) as Visit;
  const fresh = [...renewed.html.matchAll(/<li>([2-9A-Z]{5}-[2-9A-Z]{5})<\/li>/g)].map((m) => m[1]);
  expect(fresh).toHaveLength(10);
  expect(textOf((await signIn(user.email, PASSWORD, codes[1])).answer as Visit)).toContain('not right');
  expect((await signIn(user.email, PASSWORD, fresh[0])).tokens).toBeDefined();

  // The enrolment used the current time step's code: each is accepted once, so the next step's.
  const session = (await signIn(user.email, PASSWORD, totp(key, Math.floor(Date.now() / 30_000) + 1))).page;
  await account(session, '/mfa');
  expect((await session.submit('/account/mfa/off', { password: 'not my password' })).valueOf()).toMatchObject({
    status: 400,
  });
  await account(session, '/mfa');
  expect(textOf((await session.submit('/account/mfa/off', { password: PASSWORD })) as Visit)).toContain(
    'Two-step verification is off',
  );
  expect((await signIn(user.email)).tokens).toBeDefined();
});

test('without an SMTP server, each mail is an .eml file in the outbox, and the log names the file, never the link', async () => {
  const user = await createUser('acct-outbox');
  // Every line the service's logger is handed, whatever its level.
  const calls = (['debug', 'info', 'warn', 'error'] as const).map((level) => jest.spyOn(logger, level));
  const lines = () => calls.flatMap((spy) => spy.mock.calls.map((args) => JSON.stringify(args)));
  const page = browser(CALLBACK);
  await page.open(`${h.api.url}/account/forgot-password`);
  await page.submit('/account/forgot-password', { email: user.email });
  const file = await eventually(() => {
    const found = readdirSync(outbox).filter((name) => name.includes('-password-reset-'));
    if (found.length === 0) throw new Error('no mail in the outbox yet');
    return join(outbox, found[0]);
  });
  const message = readFileSync(file, 'utf8');
  expect(message).toContain(`To: ${user.email}`);
  expect(message).toMatch(/Content-Type: text\/html/);
  const token = /reset-password\?token=([A-Za-z0-9_-]+)/.exec(message)![1];
  const logged = await eventually(() => {
    const line = lines().find((l) => l.includes('password-reset written to'));
    if (!line) throw new Error('no log line yet');
    return line;
  });
  expect(logged).toContain(file);
  // The line's own field names the file, as a log search finds it.
  expect(lines().some((l) => l.includes(`"file":${JSON.stringify(file)}`))).toBe(true);
  expect(lines().join('\n')).not.toContain(token);
});

test('reset requests from one client address past Auth:PasswordReset:AddressPermitLimit answer 429 with Retry-After', async () => {
  // The outbox test above made one request from this address.
  const statuses: number[] = [];
  let retryAfter: string | null = null;
  for (let i = 0; i < ADDRESS_LIMIT; i++) {
    const answer = await fetch(`${h.api.url}/account/forgot-password`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ email: uniqueEmail('address-limit') }).toString(),
    });
    statuses.push(answer.status);
    retryAfter ??= answer.headers.get('retry-after');
  }
  expect(statuses).toEqual([200, 200, 200, 429]);
  expect(Number(retryAfter)).toBe(15 * 60);
});
