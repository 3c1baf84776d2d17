import { rowsWhere } from '../support/rows';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as oidc from 'openid-client';
import { closeServer, listen, listeningUrl } from '../../platform/net/listen';
import { unprotectText } from '../../platform/security/data-protection';
import { findUserIdByEmail } from '../../platform/store/users';
import { uniqueEmail, useHarness } from '../support/harness';
import { authorizationRequest, PORTAL_CALLBACK, registerPortal, relyingParty } from '../support/relying-party';
import { browser, loggedUnder, textOf, type Visit } from '../support/sign-in-flow';
import { logger } from '../../platform/observability/logger';
import {
  startUpstreamProvider,
  UPSTREAM_CLIENT,
  type UpstreamAccount,
  type UpstreamProvider,
} from '../support/upstream-provider';

// Globex's own OpenID provider on 127.0.0.2 (test/support/upstream-provider.ts).
// A database of its own: providers, domains and clients are named the same in other test files.
const h = useHarness({ apps: { crm: {} }, allowedInternalTargets: ['127.0.0.1', '127.0.0.2'], ownDatabase: true });
// A refused answer's page shows a reference; the check that failed is in the log line under it.
const warn = jest.spyOn(logger, 'warn');
const UPSTREAM_SECRET = UPSTREAM_CLIENT.secret;
let upstream: UpstreamProvider;

beforeAll(async () => {
  upstream = await startUpstreamProvider('127.0.0.2', `${h.api.publicUrl}/oidc/callback`);
  const url = upstream.url;
  const created = await h.admin('POST', '/api/v1/sso/oidc-providers', {
    id: 'globex',
    name: 'Globex',
    authority: url,
    clientId: 'identity-service',
    clientSecret: UPSTREAM_SECRET,
    domains: ['Globex.example'],
    loginProviderNames: ['GlobexScheme'],
  });
  expect(created.status).toBe(201);
  await registerPortal(h);
}, 60_000);

afterAll(async () => {
  await upstream?.close();
});

/** A person signs in to the portal with an e-mail of the Globex domain, and Globex says who they are. */
async function signInThroughGlobex(typed: string, account: UpstreamAccount, stopAt = PORTAL_CALLBACK) {
  upstream.next = account;
  const rp = await relyingParty(h.api.publicUrl, 'portal');
  const { url, verifier } = await authorizationRequest(rp, {
    redirect_uri: PORTAL_CALLBACK,
    scope: 'openid profile email',
  });
  const person = browser(stopAt);
  await person.open(url);
  const atGlobex = await person.submit('/email', { email: typed });
  const end = stopAt === PORTAL_CALLBACK ? await person.submit('/login', {}) : atGlobex;
  if (stopAt === PORTAL_CALLBACK) expect(textOf(atGlobex)).toContain('Globex sign-in');
  const tokens = async () => {
    if (!(end instanceof URL)) throw new Error(`expected the way back to the portal, got: ${textOf(end)}`);
    return oidc.authorizationCodeGrant(rp, end, { pkceCodeVerifier: verifier });
  };
  return { person, end, tokens };
}

const loginOf = (subject: string) =>
  h.context.db
    .selectFrom('user_logins')
    .selectAll()
    .where('login_provider', '=', 'globex')
    .where('provider_key', '=', subject)
    .executeTakeFirst();

describe('home-realm discovery and the upstream OIDC callback', () => {
  test('a first sign-in creates the user, provisions it into every app, links the login and issues the code', async () => {
    const email = uniqueEmail('alice').replace('@example.test', '@globex.example');
    const { tokens } = await signInThroughGlobex(email, {
      sub: 'globex-alice',
      email,
      given_name: 'Alice',
      family_name: 'Liddell',
    });
    const claims = (await tokens()).claims()!;
    const userId = await findUserIdByEmail(h.context.db, email);
    expect(claims).toMatchObject({ sub: userId, email, given_name: 'Alice', amr: ['external'] });
    expect(h.apps.crm.state.confirmedUserIds()).toContain(userId);
    expect(await loginOf('globex-alice')).toMatchObject({ user_id: userId, provider_display_name: 'Globex' });

    // A returning user: the login is known, nothing is created or tried again.
    const tries = h.apps.crm.state.calls.filter((c) => c.path === '/try').length;
    const again = await signInThroughGlobex(email, { sub: 'globex-alice', email });
    expect((await again.tokens()).claims()).toMatchObject({ sub: userId });
    expect(h.apps.crm.state.calls.filter((c) => c.path === '/try')).toHaveLength(tries);
  });

  test("an app's refusal answers 400 with its reason; the user is gone and no login is left", async () => {
    h.apps.crm.state.behaviour = { rejectWith: 'no licence for this company' };
    const email = uniqueEmail('refused').replace('@example.test', '@globex.example');
    const { end } = await signInThroughGlobex(email, { sub: 'globex-refused', email });
    expect((end as Visit).status).toBe(400);
    expect(textOf(end)).toContain('no licence for this company');
    expect(await findUserIdByEmail(h.context.db, email)).toBeUndefined();
    expect(await loginOf('globex-refused')).toBeUndefined();
  });

  test('an existing user of a Globex domain is linked; one of another domain is not', async () => {
    const email = uniqueEmail('bob').replace('@example.test', '@globex.example');
    const created = await h.admin('POST', '/api/v1/profile/', { email });
    expect(created.status).toBe(201);
    const { tokens } = await signInThroughGlobex(email, { sub: 'globex-bob', email });
    expect((await tokens()).claims()).toMatchObject({ sub: created.body.userId });
    expect(await loginOf('globex-bob')).toMatchObject({ user_id: created.body.userId });

    const outsider = uniqueEmail('carol');
    expect((await h.admin('POST', '/api/v1/profile/', { email: outsider })).status).toBe(201);
    const typed = uniqueEmail('carol').replace('@example.test', '@globex.example');
    const { end } = await signInThroughGlobex(typed, { sub: 'globex-carol', email: outsider });
    expect((end as Visit).status).toBe(400);
    expect(textOf(end)).toContain('Globex does not sign in users of example.test');
    expect(await loginOf('globex-carol')).toBeUndefined();
  });

  // Issue 37 item 17: Globex could create an account for any address it asserted, outside its SSO domains too.
  test("an address outside Globex's domains gets no account unless the provider allows other domains", async () => {
    const typed = uniqueEmail('frank').replace('@example.test', '@globex.example');
    const elsewhere = uniqueEmail('frank').replace('@example.test', '@elsewhere.example');
    const refused = await signInThroughGlobex(typed, { sub: 'globex-frank', email: elsewhere });
    expect((refused.end as Visit).status).toBe(400);
    expect(textOf(refused.end)).toContain('Globex does not sign in users of elsewhere.example');
    expect(await findUserIdByEmail(h.context.db, elsewhere)).toBeUndefined();
    expect(await loginOf('globex-frank')).toBeUndefined();

    const globex = (await h.admin('GET', '/api/v1/sso/oidc-providers/globex')).body;
    expect(globex.allowOtherDomains).toBe(false);
    const { hasClientSecret: _secret, ...writable } = globex;
    const put = (allowOtherDomains: boolean) =>
      h.admin('PUT', '/api/v1/sso/oidc-providers/globex', { ...writable, allowOtherDomains });
    expect((await put(true)).status).toBe(200);
    try {
      const allowed = await signInThroughGlobex(typed, { sub: 'globex-frank', email: elsewhere });
      const userId = await findUserIdByEmail(h.context.db, elsewhere);
      expect((await allowed.tokens()).claims()).toMatchObject({ sub: userId, email: elsewhere });
    } finally {
      expect((await put(false)).status).toBe(200);
    }
  });

  test("a migrated external login under one of the provider's scheme names signs its user in", async () => {
    const email = uniqueEmail('dave');
    const created = await h.admin('POST', '/api/v1/profile/', { email });
    await h.context.db
      .insertInto('user_logins')
      .values({
        login_provider: 'GlobexScheme',
        provider_key: 'legacy-dave',
        provider_display_name: 'Globex',
        user_id: created.body.userId,
      })
      .execute();
    const { tokens } = await signInThroughGlobex('dave@globex.example', {
      sub: 'legacy-dave',
      email: 'dave@globex.example',
    });
    expect((await tokens()).claims()).toMatchObject({ sub: created.body.userId });
  });

  test('a deactivated user is refused', async () => {
    const email = uniqueEmail('erin').replace('@example.test', '@globex.example');
    const created = await h.admin('POST', '/api/v1/profile/', { email });
    await h.context.db.updateTable('users').set({ active: false }).where('id', '=', created.body.userId).execute();
    const { end } = await signInThroughGlobex(email, { sub: 'globex-erin', email });
    expect((end as Visit).status).toBe(400);
    expect(textOf(end)).toContain('This account is deactivated.');
  });

  test('an answer with an unknown state, or an ID token with another nonce, is refused and creates nothing', async () => {
    const unknown = await fetch(`${h.api.url}/oidc/callback?code=abc&state=not-one-we-sent`);
    expect(unknown.status).toBe(400);
    expect(loggedUnder(await unknown.text(), warn)).toContain('the state is unknown, expired or already used');

    // Stop at the upstream authorization request and change its nonce before the browser goes on.
    const email = uniqueEmail('mallory').replace('@example.test', '@globex.example');
    const { person, end } = await signInThroughGlobex(email, { sub: 'globex-mallory', email }, upstream.url);
    const request = end as URL;
    expect(request.pathname).toBe('/auth');
    request.searchParams.set('nonce', 'a-nonce-the-service-did-not-send');
    const sameBrowser = browser(PORTAL_CALLBACK, person.jar);
    await sameBrowser.open(request.href);
    const answer = await sameBrowser.submit('/login', {});
    expect((answer as Visit).status).toBe(400);
    expect(loggedUnder(answer as Visit, warn)).toMatch(/failed a check: .*nonce/);
    expect(await findUserIdByEmail(h.context.db, email)).toBeUndefined();

    // The same answer a second time: its state was used.
    const replayed = await fetch(
      `${h.api.url}${new URL((answer as Visit).url).pathname}${new URL((answer as Visit).url).search}`,
    );
    expect(replayed.status).toBe(400);
    expect(loggedUnder(await replayed.text(), warn)).toContain('already used');
  });
});

// Pentest (sign-in security, item 4): the SSO-domain rule was enforced on the e-mail page only. An attacker registered
// victim@<sso domain> with a password; the victim's first sign-in through the IdP was linked to that account, and the
// attacker's password still opened it.
describe('the SSO-domain rule holds at every step', () => {
  const globexEmail = (label: string) => uniqueEmail(label).replace('@example.test', '@globex.example');

  test('registration of an SSO-domain address answers 400 naming the rule, and creates nothing', async () => {
    const email = globexEmail('squatter');
    const answer = await h.request('POST', '/api/auth/register', { email, password: 'a long passphrase 7' });
    expect(answer.status).toBe(400);
    expect(answer.body.detail).toContain(
      "addresses of globex.example sign in through their organization's identity provider",
    );
    expect(await findUserIdByEmail(h.context.db, email)).toBeUndefined();
  });

  test('a password posted straight to the password step for an SSO-domain address is not checked: the browser goes to the IdP', async () => {
    const email = globexEmail('direct');
    const created = await h.admin('POST', '/api/v1/profile/', { email, password: 'a long passphrase 7' });
    expect(created.status).toBe(201);
    const rp = await relyingParty(h.api.publicUrl, 'portal');
    const { url } = await authorizationRequest(rp, { redirect_uri: PORTAL_CALLBACK, scope: 'openid' });
    const person = browser(upstream.url);
    const emailPage = (await person.open(url)) as Visit;
    const uid = new URL(emailPage.url).pathname.split('/')[2];
    const answer = await person.post(`${h.api.url}/interaction/${uid}/password`, {
      email,
      password: 'a long passphrase 7',
    });
    expect(answer).toBeInstanceOf(URL);
    expect((answer as URL).href.startsWith(upstream.url)).toBe(true);
    const [failures] = await rowsWhere(h.context.db, 'users', { id: created.body.userId });
    expect(failures.access_failed_count).toBe(0);
  });

  test('a federated sign-in is not linked to an account with a password and an unconfirmed e-mail; it is refused with what to do', async () => {
    // The squatter's account, made before the domain was an SSO domain (registration refuses it now).
    const email = globexEmail('victim');
    const squatted = await h.admin('POST', '/api/v1/profile/', { email, password: 'attacker passphrase 1' });
    expect(squatted.status).toBe(201);
    const { end } = await signInThroughGlobex(email, { sub: 'globex-victim', email });
    expect((end as Visit).status).toBe(400);
    expect(textOf(end)).toContain('already exists here with its own password');
    expect(textOf(end)).toContain(`account id ${squatted.body.userId}`);
    expect(await loginOf('globex-victim')).toBeUndefined();

    // Once an operator confirmed the address (its owner set that password), the sign-in links.
    await h.context.db
      .updateTable('users')
      .set({ email_confirmed: true })
      .where('id', '=', squatted.body.userId)
      .execute();
    const { tokens } = await signInThroughGlobex(email, { sub: 'globex-victim', email });
    expect((await tokens()).claims()).toMatchObject({ sub: squatted.body.userId });
  });
});

describe('the OIDC providers admin API', () => {
  test('the client secret is write-only and sealed; a PUT without it keeps it', async () => {
    const read = await h.admin('GET', '/api/v1/sso/oidc-providers/globex');
    expect(read.body).toEqual({
      id: 'globex',
      name: 'Globex',
      authority: upstream.url,
      clientId: 'identity-service',
      hasClientSecret: true,
      scopes: ['openid', 'email', 'profile'],
      domains: ['globex.example'],
      enabled: true,
      loginProviderNames: ['GlobexScheme'],
      allowOtherDomains: false,
    });
    const { hasClientSecret: _has, ...body } = read.body;
    expect((await h.admin('PUT', '/api/v1/sso/oidc-providers/globex', { ...body, name: 'Globex Corp' })).status).toBe(
      200,
    );
    const row = await h.context.db
      .selectFrom('oidc_providers')
      .select(['name', 'client_secret', 'client_secret_sealed'])
      .where('id', '=', 'globex')
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({ name: 'Globex Corp', client_secret_sealed: true });
    expect(row.client_secret).not.toContain(UPSTREAM_SECRET);
    expect(unprotectText(row.client_secret!, h.context.dataProtection!)).toBe(UPSTREAM_SECRET);
    expect((await h.admin('GET', '/api/v1/sso/oidc-providers')).body.map((p: { id: string }) => p.id)).toEqual([
      'globex',
    ]);
  });

  test('a domain of another provider answers 409; an internal authority outside the allow-list 400; a second create 409', async () => {
    const other = {
      id: 'initech',
      name: 'Initech',
      authority: upstream.url,
      clientId: 'c',
      domains: ['initech.example', 'globex.example'],
    };
    const taken = await h.admin('POST', '/api/v1/sso/oidc-providers', other);
    expect(taken.status).toBe(409);
    expect(taken.body.detail).toBe('domains: globex.example belongs to oidc provider globex');
    // 127.0.0.3 is loopback but not allowed: refused before any connection.
    const internal = await h.admin('POST', '/api/v1/sso/oidc-providers', {
      ...other,
      domains: [],
      authority: 'http://127.0.0.3:9/',
    });
    expect(internal.status).toBe(400);
    expect(internal.body.detail).toMatch(/^authority: refused: /);
    const created = await h.admin('POST', '/api/v1/sso/oidc-providers', { ...other, domains: ['initech.example'] });
    expect(created.status).toBe(201);
    expect((await h.admin('POST', '/api/v1/sso/oidc-providers', other)).status).toBe(409);
    expect((await h.admin('DELETE', '/api/v1/sso/oidc-providers/initech')).status).toBe(204);
    expect((await h.admin('GET', '/api/v1/sso/oidc-providers/initech')).status).toBe(404);
    expect(
      await h.context.db.selectFrom('sso_domains').select('domain').where('provider_id', '=', 'initech').execute(),
    ).toEqual([]);
    expect((await h.request('GET', '/api/v1/sso/oidc-providers')).status).toBe(401);
  });
});

describe('the addresses an upstream provider names', () => {
  test('a discovery document naming an endpoint outside the allow-list is refused before any connection to it', async () => {
    // A provider on an allowed address whose discovery document sends the token request to 127.0.0.3 (loopback, but
    // not allowed): the code exchange must be refused by the guarded fetch, not sent.
    const rogue = createServer((req, res) => {
      const here = `http://127.0.0.2:${(rogue.address() as AddressInfo).port}`;
      const url = new URL(req.url!, here);
      if (url.pathname === '/.well-known/openid-configuration')
        return res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            issuer: here,
            authorization_endpoint: `${here}/auth`,
            token_endpoint: 'http://127.0.0.3:9/token',
            jwks_uri: `${here}/jwks`,
            response_types_supported: ['code'],
            subject_types_supported: ['public'],
            id_token_signing_alg_values_supported: ['RS256'],
          }),
        );
      if (url.pathname === '/auth') {
        const back = new URL(url.searchParams.get('redirect_uri')!);
        back.searchParams.set('code', 'a-code');
        back.searchParams.set('state', url.searchParams.get('state')!);
        return res.writeHead(302, { location: back.href }).end();
      }
      res.writeHead(404).end();
    });
    await listen(rogue, 0, '127.0.0.2', 'rogue provider', 'port');
    try {
      const created = await h.admin('POST', '/api/v1/sso/oidc-providers', {
        id: 'rogue',
        name: 'Rogue',
        authority: listeningUrl(rogue, '127.0.0.2'),
        clientId: 'identity-service',
        clientSecret: 'rogue-secret',
        domains: ['rogue.example'],
      });
      expect(created.status).toBe(201);
      const { end } = await signInThroughGlobex(
        'victim@rogue.example',
        { sub: 'x', email: 'victim@rogue.example' },
        'https://never.example/',
      );
      expect((end as Visit).status).toBe(400);
      expect(loggedUnder(end as Visit, warn)).toMatch(/failed a check: .*127\.0\.0\.3/);
      expect(await findUserIdByEmail(h.context.db, 'victim@rogue.example')).toBeUndefined();
    } finally {
      await closeServer(rogue);
    }
  });
});
