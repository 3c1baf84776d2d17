import { createServer, type Server } from 'node:http';
import * as oidc from 'openid-client';
import { createApiApp } from '../../api/app';
import { assembleApi } from '../../composition/api-dependencies';
import { closeServer, listen, listeningUrl } from '../../platform/net/listen';
import { logger } from '../../platform/observability/logger';
import { findUserIdByEmail } from '../../platform/store/users';
import { uniqueEmail, useHarness, UNLIMITED_SIGN_IN } from '../support/harness';
import { authorizationRequest, publicClient, relyingParty } from '../support/relying-party';
import { browser, loggedUnder, textOf, type Visit } from '../support/sign-in-flow';

// The sign-up page of a sign-in ("Create an account" on the e-mail page): the registration path the API takes
// (provisioning into every app by Try/Confirm/Cancel), each refusal as a page, and the sign-in going on to the client
// with the new account. Auth:RequireConfirmedEmail's variant is in email-confirmation.test.ts.
const h = useHarness({
  apps: { crm: {}, billing: {} },
  ownDatabase: true,
  config: { Auth: { ...UNLIMITED_SIGN_IN, PasswordPolicy: { MinLength: 10, RequireDigit: true } } },
});

const CALLBACK = 'https://signup-app.example.com/callback';
const PASSWORD = 'a long passphrase 7';

beforeAll(async () => {
  const put = await h.admin('PUT', '/api/v1/clients/signup-app', {
    ClientName: 'Sign-up App',
    ...publicClient(CALLBACK, ['openid', 'profile']),
  });
  expect(put.status).toBe(201);
}, 60_000);

/** A sign-in of the client up to the sign-up page, reached by the e-mail page's link. */
async function signUpPage(issuer = h.api.publicUrl) {
  const rp = await relyingParty(issuer, 'signup-app');
  const { url, verifier } = await authorizationRequest(rp, { redirect_uri: CALLBACK, scope: 'openid profile' });
  const page = browser(CALLBACK);
  const first = (await page.open(url)) as Visit;
  const link = /<a href="([^"]+)">Create an account<\/a>/.exec(first.html)?.[1];
  expect(link).toBeDefined();
  const form = (await page.open(new URL(link!.replace(/&amp;/g, '&'), first.url).href)) as Visit;
  return { rp, verifier, page, first, form };
}

const fields = (email: string, password = PASSWORD) => ({
  email,
  firstName: 'Ada',
  lastName: 'Lovelace',
  password,
  confirm: password,
});

test('"Create an account" makes the account through every app and the sign-in goes on to the client', async () => {
  const email = uniqueEmail('sign-up');
  const { rp, verifier, page, form } = await signUpPage();
  expect(form.status).toBe(200);
  expect(textOf(form)).toContain('Create an account');
  expect(textOf(form)).toContain('Sign-up App');
  expect(form.html).toContain('name="__RequestVerificationToken"');
  expect(textOf(form)).toContain('at least 10 characters, a digit');
  const back = await page.submit('/sign-up', fields(email));
  expect(back).toBeInstanceOf(URL);
  const tokens = await oidc.authorizationCodeGrant(rp, back as URL, { pkceCodeVerifier: verifier });
  const userId = await findUserIdByEmail(h.context.db, email);
  expect(tokens.claims()?.sub).toBe(userId);
  expect(tokens.claims()?.amr).toEqual(['pwd']);
  // The same creation the API makes: both apps were asked and hold the user.
  for (const app of [h.apps.crm, h.apps.billing])
    expect(app.state.calls.some((c) => (c.body as { email?: string })?.email === email)).toBe(true);
  const profile = await h.admin('GET', `/api/v1/profile/${userId}`);
  expect(profile.body).toMatchObject({ email, firstName: 'Ada', lastName: 'Lovelace' });
  const events = (await h.admin('GET', `/api/v1/audit-events?userId=${userId}&limit=10`)).body.events;
  expect(events.map((e: { detail: { method?: string } }) => e.detail.method)).toContain('sign-up');
});

test("a post without the page's anti-forgery token, or with another sign-in's, is 400 and creates nothing", async () => {
  const email = uniqueEmail('sign-up-csrf');
  const { page, form } = await signUpPage();
  const action = new URL(/action="([^"]+\/sign-up)"/.exec(form.html)![1], form.url).href;
  const missing = (await page.post(action, fields(email))) as Visit;
  expect(missing.status).toBe(400);
  expect(textOf(missing)).toContain('This form has expired');
  const other = await signUpPage();
  const token = /name="__RequestVerificationToken" value="([^"]+)"/.exec(other.form.html)![1];
  const foreign = (await page.post(action, { ...fields(email), __RequestVerificationToken: token })) as Visit;
  expect(foreign.status).toBe(400);
  expect(await findUserIdByEmail(h.context.db, email)).toBeUndefined();
});

test('a password breaking the policy, or typed differently twice, shows the rule and keeps what was typed', async () => {
  const email = uniqueEmail('sign-up-weak');
  const { page } = await signUpPage();
  const weak = (await page.submit('/sign-up', fields(email, 'short'))) as Visit;
  expect(weak.status).toBe(400);
  expect(textOf(weak)).toContain('The password must be at least 10 characters; must contain a digit.');
  expect(weak.html).toContain(`value="${email}"`);
  expect(weak.html).not.toContain('value="short"');
  const twice = (await page.submit('/sign-up', { ...fields(email), confirm: 'another passphrase 8' })) as Visit;
  expect(twice.status).toBe(400);
  expect(textOf(twice)).toContain('The two passwords are not the same.');
  expect(await findUserIdByEmail(h.context.db, email)).toBeUndefined();
});

test('a taken address says so as the API does (409) and leads to its sign-in; the account is untouched', async () => {
  const email = uniqueEmail('sign-up-taken');
  expect((await h.request('POST', '/api/auth/register', { email, password: PASSWORD })).status).toBe(201);
  const userId = await findUserIdByEmail(h.context.db, email);
  const { page } = await signUpPage();
  const taken = (await page.submit('/sign-up', fields(email, 'some other passphrase 9'))) as Visit;
  expect(taken.status).toBe(409);
  expect(textOf(taken)).toContain('You already have an account');
  expect(textOf(taken)).not.toContain(userId!);
  const password = (await page.submit('/email', {})) as Visit;
  expect(textOf(password)).toContain('Enter your password');
  expect(await page.submit('/password', { password: PASSWORD })).toBeInstanceOf(URL);
});

test("an app's refusal is shown in plain words (422), and no account is left", async () => {
  h.apps.billing.state.behaviour = { rejectWith: 'registrations are <b>closed</b> this week' };
  const email = uniqueEmail('sign-up-refused');
  const { page } = await signUpPage();
  const refused = (await page.submit('/sign-up', fields(email))) as Visit;
  expect(refused.status).toBe(422);
  expect(textOf(refused)).toContain('Your account was not created');
  expect(textOf(refused)).toContain('billing did not accept it: registrations are closed this week');
  expect(refused.html).not.toContain('<b>closed');
  expect(await findUserIdByEmail(h.context.db, email)).toBeUndefined();
});

test("an app's failed call reads as plain words with a reference (422), the detail only in the log under it", async () => {
  const warn = jest.spyOn(logger, 'warn');
  try {
    h.apps.crm.state.behaviour = { tryStatus: 404 };
    const email = uniqueEmail('sign-up-try-failed');
    const { page } = await signUpPage();
    const failed = (await page.submit('/sign-up', fields(email))) as Visit;
    expect(failed.status).toBe(422);
    expect(textOf(failed)).toContain('Your account was not created');
    expect(textOf(failed)).not.toMatch(/Try to app|HTTP 404/);
    expect(loggedUnder(failed, warn)).toContain('Try to app crm answered HTTP 404');
    // The way on is this sign-in's own e-mail page.
    const back = /<a class="onward" href="([^"]+)">Back to sign-in<\/a>/.exec(failed.html)![1];
    expect(textOf((await page.open(new URL(back, failed.url).href)) as Visit)).toContain('E-mail');
    expect(await findUserIdByEmail(h.context.db, email)).toBeUndefined();
  } finally {
    warn.mockRestore();
  }
});

/** A second API over the same store and Temporal with its own Auth settings, for a describe's tests: its issuer. */
function apiWith(name: string, auth: Record<string, unknown>): () => string {
  let server: Server;
  let issuer = '';
  let close: () => Promise<void>;
  beforeAll(async () => {
    server = createServer();
    await listen(server, 0, '127.0.0.1', name, 'port');
    issuer = listeningUrl(server, '127.0.0.1');
    const config = { ...h.config, Auth: { ...h.config.Auth, ...auth } };
    const assembled = await assembleApi(config, h.context, h.client, issuer);
    server.on('request', createApiApp(assembled.dependencies));
    close = assembled.close;
  }, 60_000);
  afterAll(async () => {
    await closeServer(server);
    await close();
  });
  return () => issuer;
}

describe('with Auth:AllowRegistration false', () => {
  const issuerOf = apiWith('closed registration', { AllowRegistration: false });

  test('the e-mail page offers no sign-up, its page is not found, and the API route answers 404', async () => {
    const issuer = issuerOf();
    const rp = await relyingParty(issuer, 'signup-app');
    const { url } = await authorizationRequest(rp, { redirect_uri: CALLBACK, scope: 'openid' });
    const page = browser(CALLBACK);
    const first = (await page.open(url)) as Visit;
    expect(textOf(first)).toContain('Sign in');
    expect(textOf(first)).not.toContain('Create an account');
    const uid = /\/interaction\/([^/]+)\/email/.exec(first.html)![1];
    expect(((await page.open(`${issuer}/interaction/${uid}/sign-up`)) as Visit).status).toBe(404);
    const api = await fetch(`${issuer}/api/auth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: uniqueEmail('closed'), password: PASSWORD }),
    });
    expect(api.status).toBe(404);
  });
});

describe('past Auth:RegistrationRateLimit', () => {
  const issuerOf = apiWith('tight registration budget', {
    RegistrationRateLimit: { PermitLimit: 1, WindowSeconds: 60 },
  });

  test('the refusal page leads back to the sign-in it came from, not to a dead end', async () => {
    const issuer = issuerOf();
    // One sign-up per address and window: the first (or an earlier one of this file, from the same address) uses it.
    await (await signUpPage(issuer)).page.submit('/sign-up', fields(uniqueEmail('budget')));
    const { page } = await signUpPage(issuer);
    const refused = await page.submit('/sign-up', fields(uniqueEmail('budget')));
    expect(refused).not.toBeInstanceOf(URL);
    const visit = refused as Visit;
    expect(visit.status).toBe(429);
    expect(textOf(visit)).toContain('Too many accounts were created from this network');
    const back = /<a href="([^"]+)">Back to sign-in<\/a>/.exec(visit.html)?.[1];
    expect(back).toMatch(/^\/interaction\/[^/]+$/);
    const signIn = (await page.open(new URL(back!, visit.url).href)) as Visit;
    expect(signIn.status).toBe(200);
    expect(signIn.html).toMatch(/action="[^"]*\/email"/);
  });
});
