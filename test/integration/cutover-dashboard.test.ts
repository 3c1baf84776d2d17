import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser as Chromium } from 'playwright-core';
import { createReadThrough } from '../../migration/read-through';
import { connectSource } from '../../migration/source/connection';
import { recordPassProgress, writeStartedMarker } from '../../migration/store/migration-markers';
import { launchChromium } from '../support/chromium';
import { createUserWith, stopAfterAll, UNLIMITED_SIGN_IN, useHarness, type Harness } from '../support/harness';
import { migrateCompletely } from '../support/migration-runs';
import { useGeneratedSource } from '../support/scratch-store';
import { browser, textOf, type Visit } from '../support/sign-in-flow';

// Issue 41 item 12: the cutover dashboard at /admin/migration, for operators signed in through the service itself
// (an OpenID Connect sign-in of the built-in admin pages client) who hold the IdentityAdmin role. The markers are
// those real runs wrote (a dry run and a real run of a generated source), the look-ups those the read-through made.
const PASSWORD = 'a long passphrase 7';
const SHOTS = '/tmp/shots-h8';
const NOWHERE = 'https://stop.invalid/';
const source = useGeneratedSource(10);

const h = useHarness(() => ({
  apps: {},
  migrationSource: source().url,
  config: {
    Migration: { MapStatusEndpoint: true, MigrateRefreshTokens: true, Version: 'sweep-2' },
    Oidc: { ReloadSeconds: 0 },
    Auth: { ...UNLIMITED_SIGN_IN },
  },
}));

async function grantIdentityAdmin(hh: Harness, userId: string) {
  await hh.context.db
    .insertInto('roles')
    .values({ id: 'role-IdentityAdmin', name: 'IdentityAdmin', normalized_name: 'IDENTITYADMIN' })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
  await hh.context.db.insertInto('user_roles').values({ user_id: userId, role_id: 'role-IdentityAdmin' }).execute();
}

/** A person opens the dashboard in a browser of their own and signs in with the forms the provider shows. */
async function signedInAt(hh: Harness, email: string) {
  const person = browser(NOWHERE);
  const first = await person.open(`${hh.api.publicUrl}/admin/migration`);
  expect(first).not.toBeInstanceOf(URL);
  expect((first as Visit).url).toContain('/interaction/');
  expect(textOf(first)).toContain('to continue to Identity admin pages');
  await person.submit('/email', { email });
  const landed = await person.submit('/password', { password: PASSWORD });
  return { person, landed: landed as Visit };
}

beforeAll(async () => {
  await migrateCompletely(h, { version: 'rehearsal', dryRun: true });
  await migrateCompletely(h, { version: 'first', dryRun: false });
  // A sweep under way, with a pass the dashboard has never heard of: it shows as any other.
  await writeStartedMarker(h.context.db, 'sweep-2', false);
  await recordPassProgress(
    h.context.db,
    'sweep-2',
    { pass: 'signing-keys', partition: 0, partitions: 1 },
    { read: 3, created: 2, updated: 0, skipped: 1, done: false },
  );
  // Two look-ups of the window: an address the source does not hold, and a refresh handle it does not hold.
  const reader = connectSource(source().url);
  const window = createReadThrough({
    target: h.context.db,
    source: reader.db,
    until: new Date(Date.now() + 3_600_000),
    dataProtection: h.context.dataProtection!,
    sourceDataProtection: {},
    budget: { permitLimit: 100, windowSeconds: 60 },
    timeoutMs: 200,
  });
  expect(await window.user('nobody-here@example.test')).toBe('absent');
  expect(await window.refreshToken('no-such-handle')).toBe(false);
  await reader.db.destroy();
}, 180_000);

describe('who sees the dashboard', () => {
  test("without a sign-in the browser is sent through the service's own sign-in, as the built-in client", async () => {
    const res = await fetch(`${h.api.publicUrl}/admin/migration`, { redirect: 'manual' });
    expect(res.status).toBe(303);
    const to = new URL(res.headers.get('location')!);
    expect(to.pathname).toBe('/connect/authorize');
    expect(Object.fromEntries(to.searchParams)).toMatchObject({
      client_id: 'identity-admin-pages',
      response_type: 'code',
      scope: 'openid',
      code_challenge_method: 'S256',
      redirect_uri: `${h.api.publicUrl}/admin/signed-in`,
    });
    // A forged session cookie counts for nothing.
    const forged = await fetch(`${h.api.publicUrl}/admin/migration`, {
      redirect: 'manual',
      headers: {
        cookie: `identity_admin_pages=${Buffer.from('{"sub":"x","at":1,"exp":9999999999}').toString('base64url')}.AAAA`,
      },
    });
    expect(forged.status).toBe(303);
  });

  test('a signed-in user without the IdentityAdmin role gets a 403 page; with it, the dashboard', async () => {
    const user = await createUserWith(h, 'operator', PASSWORD);
    const { person, landed } = await signedInAt(h, user.email);
    expect(landed.status).toBe(403);
    expect(textOf(landed)).toContain('does not hold the IdentityAdmin role');
    expect(textOf(landed)).toContain(user.email);

    await grantIdentityAdmin(h, user.id);
    const page = (await person.open(`${h.api.publicUrl}/admin/migration`)) as Visit;
    expect(page.status).toBe(200);
    expect(textOf(page)).toContain(`Signed in as ${user.email}`);

    // The role is read at every page: taken away, the next page is the 403 again.
    await h.context.db.deleteFrom('user_roles').where('user_id', '=', user.id).execute();
    expect(((await person.open(`${h.api.publicUrl}/admin/migration`)) as Visit).status).toBe(403);
    // Deactivated, the sign-in no longer stands: the page sends the browser to sign in again.
    await grantIdentityAdmin(h, user.id);
    expect((await h.admin('PATCH', `/api/v1/profile/${user.id}`, { active: false })).status).toBe(200);
    const after = await fetch(`${h.api.publicUrl}/admin/migration`, {
      redirect: 'manual',
      headers: { cookie: person.jar.header(h.api.publicUrl) },
    });
    expect(after.status).toBe(303);
  });

  test('a code is redeemed once, only with the browser that asked for it', async () => {
    const user = await createUserWith(h, 'replay', PASSWORD);
    await grantIdentityAdmin(h, user.id);
    const person = browser(`${h.api.publicUrl}/admin/signed-in`);
    await person.open(`${h.api.publicUrl}/admin/migration`);
    await person.submit('/email', { email: user.email });
    const back = (await person.submit('/password', { password: PASSWORD })) as URL;
    expect(back.pathname).toBe('/admin/signed-in');
    // Another browser (no pending sign-in of its own) cannot use the code.
    const stolen = await fetch(back, { redirect: 'manual' });
    expect(stolen.status).toBe(400);
    const cookie = person.jar.header(back.href);
    // A code the provider never issued, with the browser's own pending sign-in: refused, not a fault.
    const forgedCode = new URL(back);
    forgedCode.searchParams.set('code', 'x'.repeat(300));
    expect((await fetch(forgedCode, { redirect: 'manual', headers: { cookie } })).status).toBe(400);
    const first = await fetch(back, { redirect: 'manual', headers: { cookie } });
    expect(first.status).toBe(303);
    expect(first.headers.get('location')).toBe('/admin/migration');
    const again = await fetch(back, { redirect: 'manual', headers: { cookie } });
    expect(again.status).toBe(400);
  });
});

describe('what the dashboard shows', () => {
  let chromium: Chromium;
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    chromium = await launchChromium();
  });
  stopAfterAll(() => [chromium]);

  test('markers by version with their passes, readiness, refresh tokens, look-ups and the steps left', async () => {
    const admin = await createUserWith(h, 'dashboard', PASSWORD);
    await grantIdentityAdmin(h, admin.id);
    const { landed } = await signedInAt(h, admin.email);
    expect(landed.status).toBe(200);
    const text = textOf(landed);
    for (const version of ['rehearsal', 'first', 'sweep-2']) expect(text).toContain(`Version ${version}`);
    expect(text).toMatch(/Version rehearsal Completed dry run/);
    expect(text).toMatch(/Version sweep-2 Started/);
    // Every pass of the real runs, and the one the dashboard does not know, with its counts.
    for (const pass of ['roles', 'users', 'user-roles', 'clients', 'refresh-tokens']) expect(text).toContain(pass);
    expect(text).toMatch(/signing-keys running 3 2 0 1 0/);
    expect(text).toMatch(/users done \d+ \d+ \d+ \d+/);
    // A dry run's counts are what the real run would write, headed so; the real run after it reported the same.
    const section = (version: string) => text.slice(text.indexOf(`Version ${version}`));
    expect(section('rehearsal')).toMatch(/^[^]*?Pass State Read Would create Would update Would skip Warnings/);
    expect(section('first')).toMatch(/^[^]*?Pass State Read Created Updated Skipped Warnings/);
    const usersRow = (version: string) => section(version).match(/users done (\d+ \d+ \d+ \d+)/)![1];
    expect(usersRow('rehearsal')).toBe(usersRow('first'));
    expect(usersRow('first')).not.toMatch(/^\d+ 0 /);
    expect(text).toMatch(/Clients' readiness Version \S+: ready \d+ · will notice \d+/);
    expect(text).toMatch(/Refresh tokens carried over Version \S+: \d+ carried over/);
    expect(text).toMatch(/user not-found 1/);
    expect(text).toMatch(/refresh-token not-found 1/);
    // The steps: dry run and real run done, the sweep in progress (a second real run has not completed).
    expect(text).toMatch(/done Dry run .*? version rehearsal completed/);
    expect(text).toMatch(/done Real run .*? version first completed .*?; version sweep-2 is running/);
    expect(text).toMatch(/in progress Final sweep under a new Version/);
    expect(text).toMatch(/✗ SourceSessions:Until not set: browsers signed in at the source sign in again/);
    // Tokens left behind for a reason other than expiry are a thing to look at before cutover.
    expect(text).toMatch(/check Copy the source.*? version first: \d+ unknown payload version/);
    expect(text).toMatch(/to do Close the window .*? no window configured/);

    for (const [name, viewport] of [
      ['desktop', { width: 1280, height: 900 }],
      ['phone', { width: 390, height: 844 }],
    ] as const) {
      const context = await chromium.newContext({ viewport, deviceScaleFactor: 1 });
      const page = await context.newPage();
      await page.goto(`${h.api.publicUrl}/admin/migration`);
      await page.fill('#email', admin.email);
      await page.click('button[type=submit]');
      await page.fill('#password', PASSWORD);
      await page.click('button[type=submit]');
      await page.waitForSelector('text=What is left to do');
      await page.screenshot({ path: join(SHOTS, `cutover-${name}.png`), fullPage: true });
      // Wide tables scroll inside their box; the page itself never scrolls sideways.
      expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(viewport.width);
      await context.close();
    }
  });
});

describe('not mapped', () => {
  const unmapped = useHarness({ apps: {}, config: { Auth: { ...UNLIMITED_SIGN_IN } } });
  test('without Migration:MapStatusEndpoint the page is not there: 404, no sign-in', async () => {
    const res = await fetch(`${unmapped.api.publicUrl}/admin/migration`, { redirect: 'manual' });
    expect(res.status).toBe(404);
  });
});
