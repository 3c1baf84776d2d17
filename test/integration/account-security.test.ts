import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import * as oidc from 'openid-client';
import { freePort } from '../../dev/ports';
import { activateUser, deactivateUserReturningApps } from '../../platform/store/user-removals';
import { normalize } from '../../platform/store/users';
import { accountPages } from '../support/account-pages';
import {
  createUserWith,
  eventually,
  ownService,
  serviceProcessEnv,
  stopAfterAll,
  uniqueEmail,
  useHarness,
} from '../support/harness';
import { authorizationRequest, confidentialClient } from '../support/relying-party';
import { rowsWhere } from '../support/rows';
import { useScratchStore } from '../support/scratch-store';
import { spawnService, waitForOutput, type ServiceProcess } from '../support/service-process';
import { browser, postForm, textOf, type Browser, type Visit } from '../support/sign-in-flow';
import { smtpTo, useMailCatcher } from '../support/smtp';
import { totp } from '../support/totp';

// Sign-in security round 3 on the account pages and account recovery: re-authentication before a change of the second
// factor, the end of every other sign-in after a change, anti-forgery tokens, links bound to the account as it was,
// and budgets kept in the store. Mail goes through a real SMTP server on loopback.
const RESETS_PER_WINDOW = 3;
const RECENT_MINUTES = 30;
const catcher = useMailCatcher();
const h = useHarness(() =>
  ownService({
    Email: { ...smtpTo(catcher()), From: 'Acme Identity <no-reply@acme.example>' },
    SignIn: { ProductName: 'Acme Identity' },
    Auth: {
      RecentSignInMinutes: RECENT_MINUTES,
      PasswordReset: { PermitLimit: RESETS_PER_WINDOW, AddressPermitLimit: 10_000, WindowMinutes: 15 },
    },
  }),
);

const CALLBACK = 'https://app.example.com/callback';
const PASSWORD = 'correct horse battery 9';
const NEW_PASSWORD = 'another passphrase 1';
const client = { id: 'sec-acct-web', secret: 'sec-acct-web-secret-16', callback: CALLBACK };
const { signIn, account, enrol, formToken } = accountPages(h, client, PASSWORD);

beforeAll(async () => {
  const answer = await h.admin(
    'PUT',
    `/api/v1/clients/${client.id}`,
    // The account page names the application by its ClientName.
    { ClientName: 'Acme Portal', ...confidentialClient(CALLBACK, ['openid', 'profile'], client.secret) },
  );
  expect(answer.status).toBe(201);
}, 60_000);

const createUser = (label: string) => createUserWith(h, label, PASSWORD);

/** The user's sessions signed in `minutesAgo` (the session's login time moved back). */
async function ageSessions(userId: string, minutesAgo: number) {
  await h.context.db
    .updateTable('oidc_payloads')
    .set({
      payload: sql`jsonb_set(payload, '{loginTs}', to_jsonb(${Math.floor(Date.now() / 1000) - minutesAgo * 60}::int))`,
    })
    .where('model', '=', 'Session')
    .where(sql<boolean>`payload->>'accountId' = ${userId}`)
    .execute();
}

/** A form post with the browser's cookies, as another site's page makes the browser send one. */
const postWithCookies = (page: Browser, path: string, fields: Record<string, string>) =>
  postForm(`${h.api.publicUrl}${path}`, fields, { cookie: page.jar.header(h.api.publicUrl) });

/** Whether the sign-in's refresh token still works; the rotated one takes its place. */
async function refreshes(signedIn: { rp: oidc.Configuration; tokens?: { refresh_token?: string } }) {
  try {
    const tokens = await oidc.refreshTokenGrant(signedIn.rp, signedIn.tokens!.refresh_token!);
    signedIn.tokens = tokens;
    return true;
  } catch {
    return false;
  }
}

describe('changing the second factor asks for the password (or a recent sign-in) on every path', () => {
  test(`a sign-in within Auth:RecentSignInMinutes (${RECENT_MINUTES}) shows the enrolment; an older one asks for the password`, async () => {
    const user = await createUser('recent-setting');
    const { page } = await signIn(user.email);
    await ageSessions(user.id, RECENT_MINUTES - 10);
    expect(textOf(await account(page, '/mfa'))).toContain('Scan this code');
    await ageSessions(user.id, RECENT_MINUTES + 1);
    expect(textOf(await account(page, '/mfa'))).toContain('Confirm it is you');
  });

  test('a stale session posting a code form whose enrolment does not open gets the password page, never a new key', async () => {
    const user = await createUser('stale-enrol');
    const { page } = await signIn(user.email);
    await ageSessions(user.id, 60);
    const token = formToken(await account(page))!;
    for (const pending of ['forged', '', 'v2:test:AAAA']) {
      const answer = await postWithCookies(page, '/account/mfa', {
        pending,
        code: '123456',
        __RequestVerificationToken: token,
      });
      const html = await answer.text();
      expect(answer.status).toBe(400);
      expect(html).toContain('Confirm it is you');
      expect(html).not.toContain('class="key"');
      expect(html).not.toContain('name="pending"');
    }
    // The password still opens the enrolment.
    await account(page, '/mfa');
    expect(textOf(await page.submit('/account/mfa', { password: PASSWORD }))).toContain('Scan this code');
  });
});

describe('a change on the account page ends every other sign-in, keeps this browser, and is mailed', () => {
  test('a new password: other sessions, refresh tokens and silent sign-ins end; this browser stays; the user is told', async () => {
    const user = await createUser('change-ends');
    const other = await signIn(user.email);
    const mine = await signIn(user.email);
    expect(await refreshes(other)).toBe(true);
    await account(mine.page);
    const changed = (await mine.page.submit('/account/password', {
      current: PASSWORD,
      password: NEW_PASSWORD,
      confirm: NEW_PASSWORD,
    })) as Visit;
    expect(textOf(changed)).toContain('Your password is changed');

    expect(await refreshes(other)).toBe(false);
    expect(await refreshes(mine)).toBe(false);
    // Without a session the account page starts its own sign-in.
    expect(textOf(await account(other.page))).toMatch(/to continue to .* account/);
    // The other browser's silent sign-in asks who is signing in; this one goes straight back to the application.
    const rp = other.rp;
    const { url } = await authorizationRequest(rp, { redirect_uri: CALLBACK, scope: 'openid' });
    expect(textOf((await other.page.open(url)) as Visit)).toContain('Sign in');
    expect((await account(mine.page)).status).toBe(200);
    expect(await mine.page.open(url)).toBeInstanceOf(URL);

    const mail = await catcher().next(user.email);
    expect(mail.subject).toBe('Your password was changed (Acme Identity)');
    expect(mail.text).toContain('Every other device and application was signed out');
    expect(mail.links).toEqual([]);
    expect(mail.text).not.toContain(NEW_PASSWORD);
    const events = await rowsWhere(h.context.db, 'audit_events', { user_id: user.id, type: 'sessions-revoked' });
    expect(events.map((e) => e.detail)).toEqual([{ sessions: 1, reason: 'password-changed' }]);
  });

  test('turning two-step verification on and off ends the other sign-ins too, and each change is mailed', async () => {
    const user = await createUser('mfa-ends');
    const other = await signIn(user.email);
    const mine = await signIn(user.email);
    const { key } = await enrol(mine.page);
    expect(await refreshes(other)).toBe(false);
    expect((await account(mine.page)).status).toBe(200);
    expect((await catcher().next(user.email)).subject).toBe('Two-step verification is on (Acme Identity)');

    const again = await signIn(user.email, PASSWORD, totp(key, Math.floor(Date.now() / 30_000) + 1));
    expect(await refreshes(again)).toBe(true);
    await account(mine.page, '/mfa');
    expect(textOf(await mine.page.submit('/account/mfa/off', { password: PASSWORD }))).toContain(
      'Two-step verification is off',
    );
    expect(await refreshes(again)).toBe(false);
    expect((await account(mine.page)).status).toBe(200);
    expect((await catcher().next(user.email, 2)).subject).toBe('Two-step verification is off (Acme Identity)');
  });
});

describe('every form of the account pages carries an anti-forgery token', () => {
  test("a post without the session token (another site's form) changes nothing: 400, sessions and password intact", async () => {
    const user = await createUser('csrf');
    const mine = await signIn(user.email);
    const other = await signIn(user.email);
    const crossSite = await postWithCookies(mine.page, '/account/sessions/end', {});
    expect(crossSite.status).toBe(400);
    expect(await crossSite.text()).toContain('Nothing was changed');
    expect(await refreshes(other)).toBe(true);
    expect((await account(mine.page)).status).toBe(200);

    // Another session's token is no token for this one.
    const othersToken = formToken(await account(other.page))!;
    for (const [path, fields] of [
      ['/account/password', { current: PASSWORD, password: NEW_PASSWORD, confirm: NEW_PASSWORD }],
      ['/account/sessions/end', {}],
      ['/account/mfa', { password: PASSWORD }],
      ['/account/mfa/off', { password: PASSWORD }],
      ['/account/mfa/recovery-codes', { password: PASSWORD }],
      ['/account/names', { firstName: 'Mallory' }],
      ['/account/email', { email: uniqueEmail('csrf-moved'), password: PASSWORD }],
      ['/account/sessions/end-one', { session: 'any' }],
    ] as const) {
      const answer = await postWithCookies(mine.page, path, { ...fields, __RequestVerificationToken: othersToken });
      expect([path, answer.status]).toEqual([path, 400]);
    }
    expect((await signIn(user.email, PASSWORD)).tokens).toBeDefined();
    expect(await refreshes(other)).toBe(true);
    expect((await rowsWhere(h.context.db, 'users', { id: user.id }))[0]).toMatchObject({
      email: user.email,
      first_name: null,
    });
    expect(catcher().to(user.email)).toEqual([]);
    // The page's own form, with its token, still works.
    await account(mine.page);
    expect(textOf(await mine.page.submit('/account/sessions/end', {}))).toContain('sign-ins ended');
  });
});

describe('links are bound to the account as it was when they were mailed', () => {
  async function resetLink(email: string, count: number) {
    const page = browser(CALLBACK);
    await page.open(`${h.api.url}/account/forgot-password`);
    await page.submit('/account/forgot-password', { email });
    return (await catcher().next(email, count)).links[0];
  }
  const opens = async (link: string) => ((await browser(CALLBACK).open(link)) as Visit).status;

  test('a reset link dies when the address changes, and after a deactivation even once the account is active again', async () => {
    const user = await createUser('bound-address');
    const link = await resetLink(user.email, 1);
    expect(await opens(link)).toBe(200);
    const moved = uniqueEmail('bound-moved');
    await h.context.db
      .updateTable('users')
      .set({ email: moved, normalized_email: normalize(moved) })
      .where('id', '=', user.id)
      .execute();
    expect(await opens(link)).toBe(400);

    const reactivated = await createUser('bound-state');
    const before = await resetLink(reactivated.email, 1);
    await deactivateUserReturningApps(h.context.db, reactivated.id);
    await activateUser(h.context.db, reactivated.id);
    expect(await opens(before)).toBe(400);
    const after = await resetLink(reactivated.email, 2);
    expect(await opens(after)).toBe(200);
  });
});

describe('reset budgets are kept in the store', () => {
  test(`parallel requests for one account send at most Auth:PasswordReset:PermitLimit (${RESETS_PER_WINDOW}) mails`, async () => {
    for (let trial = 0; trial < 3; trial++) {
      const user = await createUser(`budget-race-${trial}`);
      const post = () =>
        postForm(`${h.api.url}/account/forgot-password`, { email: user.email }).then((answer) => answer.status);
      expect(await Promise.all(Array.from({ length: 10 }, post))).toEqual(Array(10).fill(200));
      await eventually(async () => {
        const asked = await rowsWhere(h.context.db, 'audit_events', {
          user_id: user.id,
          type: 'password-reset-requested',
        });
        if (asked.length < 10) throw new Error(`${asked.length} requests recorded`);
      });
      expect(await rowsWhere(h.context.db, 'account_tokens', { user_id: user.id })).toHaveLength(RESETS_PER_WINDOW);
      await catcher().next(user.email, RESETS_PER_WINDOW);
      await new Promise((r) => setTimeout(r, 300));
      expect(catcher().to(user.email)).toHaveLength(RESETS_PER_WINDOW);
    }
  });

  describe('Auth:PasswordReset:AddressPermitLimit across two API processes', () => {
    const ADDRESS_LIMIT = 4;
    const store = useScratchStore('ips_reset_budget');
    const apis: ServiceProcess[] = [];
    const urls: string[] = [];
    beforeAll(async () => {
      const database = await store()
        .selectNoFrom(sql<string>`current_database()`.as('name'))
        .executeTakeFirstOrThrow();
      const url = new URL(process.env.TEST_DATABASE_URL!);
      url.pathname = `/${database.name}`;
      for (let i = 0; i < 2; i++) {
        const port = await freePort();
        urls.push(`http://127.0.0.1:${port}`);
        apis.push(
          spawnService('api/server.ts', {
            ...serviceProcessEnv(`test-unserved-${randomUUID()}`),
            DATABASE_URL: url.toString(),
            PORT: String(port),
            Api__PublicUrl: urls[i],
            Auth__PasswordReset__AddressPermitLimit: String(ADDRESS_LIMIT),
          }),
        );
      }
      await Promise.all(apis.map((api) => waitForOutput(api, /api: listening on/)));
    }, 90_000);
    stopAfterAll(() => apis);

    test('requests alternating between the two spend one budget: then 429 with Retry-After', async () => {
      const statuses: number[] = [];
      let retryAfter: string | null = null;
      for (let i = 0; i < 2 * ADDRESS_LIMIT; i++) {
        const answer = await postForm(`${urls[i % 2]}/account/forgot-password`, { email: uniqueEmail('two-apis') });
        statuses.push(answer.status);
        if (answer.status === 429) retryAfter ??= answer.headers.get('retry-after');
      }
      expect(statuses).toEqual([...Array(ADDRESS_LIMIT).fill(200), ...Array(ADDRESS_LIMIT).fill(429)]);
      expect(Number(retryAfter)).toBe(15 * 60);
    });
  });
});

// Issue 41 item 4: the account page's sessions, name and address.
describe('the account page lists each sign-in and ends one of them alone', () => {
  test('when, from where (address and device) and for which application by name; ending one ends its refresh token', async () => {
    const user = await createUser('one-session');
    const laptop = await signIn(user.email);
    const phone = await signIn(user.email);
    const page = await account(phone.page);
    expect(page.html.match(/<li class="session">/g)).toHaveLength(2);
    // Node's fetch says "node": a program, not a browser, named by its product token.
    expect(textOf(page)).toMatch(
      /node · 127\.0\.0\.1 Signed in \d{4}-\d\d-\d\d \d\d:\d\d UTC Applications: Acme Portal/,
    );
    expect(textOf(page)).toContain('This browser');
    expect(page.html.match(/End this session/g)).toHaveLength(1);

    // Another user's session id, or this browser's, ends nothing.
    const stranger = await createUser('one-session-stranger');
    const theirs = await signIn(stranger.email);
    const theirId = /name="session" value="([^"]+)"/.exec((await account(phone.page)).html)![1];
    const strangerPage = await account(theirs.page);
    const strangerOther = /name="session" value="([^"]+)"/.exec(strangerPage.html);
    expect(strangerOther).toBeNull();
    const token = formToken(strangerPage)!;
    const foreign = await postWithCookies(theirs.page, '/account/sessions/end-one', {
      session: theirId,
      __RequestVerificationToken: token,
    });
    expect(textOf({ url: '', status: foreign.status, html: await foreign.text() })).toContain('had ended already');
    expect(await refreshes(laptop)).toBe(true);

    await account(phone.page);
    const ended = (await phone.page.submit('/account/sessions/end-one', {})) as Visit;
    expect(textOf(ended)).toContain('The session is ended');
    expect(ended.html.match(/<li class="session">/g)).toHaveLength(1);
    expect(await refreshes(laptop)).toBe(false);
    // Without its session the laptop's account page starts its own sign-in.
    expect(textOf(await account(laptop.page))).toMatch(/to continue to .* account/);
    expect(await refreshes(phone)).toBe(true);
    const events = (await h.admin('GET', `/api/v1/audit-events?userId=${user.id}&type=session-ended`)).body.events;
    expect(events).toHaveLength(1);
  });
});

describe('the name changes at once, the address after the link mailed to the new one', () => {
  test('a new name is saved and shown', async () => {
    const user = await createUser('names');
    const { page } = await signIn(user.email);
    await account(page);
    const saved = (await page.submit('/account/names', { firstName: ' Ada ', lastName: 'Lovelace' })) as Visit;
    expect(textOf(saved)).toContain('Your name is saved.');
    expect(saved.html).toContain('value="Ada"');
    expect((await h.admin('GET', `/api/v1/profile/${user.id}`)).body).toMatchObject({
      firstName: 'Ada',
      lastName: 'Lovelace',
    });
  });

  test('the link to the new address changes it and tells the old one; the old address and links no longer sign in', async () => {
    const user = await createUser('moving');
    const { page } = await signIn(user.email);
    await account(page);
    const moved = uniqueEmail('moved');
    const wrong = (await page.submit('/account/email', { email: moved, password: 'not my password' })) as Visit;
    expect(wrong.status).toBe(400);
    expect(textOf(wrong)).toContain('Your password is not right');
    await account(page);
    const sent = (await page.submit('/account/email', { email: moved, password: PASSWORD })) as Visit;
    expect(textOf(sent)).toContain(`We have sent a link to ${moved}`);
    const mail = await catcher().next(moved);
    expect(mail.subject).toMatch(/^Confirm your new e-mail address/);
    const link = mail.links[0];
    expect(link.startsWith(`${h.api.publicUrl}/account/confirm-email-change?token=`)).toBe(true);
    // Nothing changes before the link is opened.
    const [before] = await rowsWhere(h.context.db, 'users', { id: user.id });
    expect(before.email).toBe(user.email);

    const opened = (await browser(CALLBACK).open(link)) as Visit;
    expect(opened.status).toBe(200);
    expect(textOf(opened)).toContain(`You sign in with ${moved} from now on`);
    const told = await catcher().next(user.email);
    expect(told.subject).toMatch(/^Your e-mail address was changed/);
    expect(told.links).toEqual([]);
    const [row] = await rowsWhere(h.context.db, 'users', { id: user.id });
    expect(row).toMatchObject({ email: moved, user_name: moved, email_confirmed: true });
    // A new security stamp (ChangeEmailAsync's): a source session cookie of the old address carries over no more.
    expect(row.security_stamp).not.toBe(before.security_stamp);
    expect(((await browser(CALLBACK).open(link)) as Visit).status).toBe(400);
    expect((await signIn(moved)).tokens).toBeDefined();
    expect((await signIn(user.email)).tokens).toBeUndefined();
    const types = (await h.admin('GET', `/api/v1/audit-events?userId=${user.id}`)).body.events.map(
      (e: { type: string }) => e.type,
    );
    expect(types).toEqual(expect.arrayContaining(['email-change-requested', 'email-changed']));
  });

  test('a taken address reads as a free one; its owner is told instead and nothing changes', async () => {
    const owner = await createUser('taken-owner');
    const user = await createUser('taken-asker');
    const { page } = await signIn(user.email);
    await account(page);
    const taken = (await page.submit('/account/email', { email: owner.email, password: PASSWORD })) as Visit;
    await account(page);
    const free = uniqueEmail('taken-free');
    const other = (await page.submit('/account/email', { email: free, password: PASSWORD })) as Visit;
    expect([taken.status, other.status]).toEqual([200, 200]);
    expect(textOf(taken).replaceAll(owner.email, 'ADDRESS')).toBe(textOf(other).replaceAll(free, 'ADDRESS'));
    const notice = await catcher().next(owner.email);
    expect(notice.text).toContain('This address already belongs to your account, so nothing changed.');
    expect(notice.links).toEqual([]);
    await catcher().next(free);
    expect((await rowsWhere(h.context.db, 'users', { id: user.id }))[0].email).toBe(user.email);
    expect((await rowsWhere(h.context.db, 'users', { id: owner.id }))[0].email).toBe(owner.email);
  });

  test('a link whose address was taken in the meantime changes nothing (409)', async () => {
    const user = await createUser('race');
    const { page } = await signIn(user.email);
    await account(page);
    const wanted = uniqueEmail('race-wanted');
    await page.submit('/account/email', { email: wanted, password: PASSWORD });
    const link = (await catcher().next(wanted)).links[0];
    expect((await h.admin('POST', '/api/v1/profile/', { email: wanted, password: PASSWORD })).status).toBe(201);
    const opened = (await browser(CALLBACK).open(link)) as Visit;
    expect(opened.status).toBe(409);
    expect(textOf(opened)).toContain('This address is used by another account');
    expect((await rowsWhere(h.context.db, 'users', { id: user.id }))[0].email).toBe(user.email);
  });
});
