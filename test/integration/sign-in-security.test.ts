import { rowsWhere } from '../support/rows';
import { createHash, pbkdf2Sync, randomUUID } from 'node:crypto';
import bcrypt from 'bcryptjs';
import { sql } from 'kysely';
import * as oidc from 'openid-client';
import * as passwordFormats from '../../platform/security/password-formats';
import { base32Decode } from '../../platform/security/base32';
import { protectSecret } from '../../platform/security/data-protection';
import { metricsRegistry } from '../../platform/observability/metrics';
import { logger } from '../../platform/observability/logger';
import { enrolTotp } from '../../sign-in/store/mfa';
import { counterValue } from '../support/metrics';
import { reserveSignInAttempt } from '../../sign-in/store/sign-in-users';
import { uniqueEmail, ownService, useHarness, createUserWith } from '../support/harness';
import { authorizationRequest, confidentialClient, relyingParty as relyingPartyOf } from '../support/relying-party';
import { codeFlow, type Started } from '../support/code-flow';
import {
  browser,
  GRANT_NOT_ALLOWED,
  postForm,
  secretlessClientCredentials,
  textOf,
  type Visit,
} from '../support/sign-in-flow';
import { AUTHENTICATOR_KEY, fixtureTotp as totp } from '../support/totp';
import { storedClientRow } from '../support/client-rows';

// The attacks of the sign-in pentest (issue "Sign-in security"), each reproduced against a service of this file's own:
// real HTTP, the real provider, openid-client as the relying party. A database of its own: the lockout and the
// role checks count rows that other files would share.
const MAX_FAILED = 3;
const h = useHarness(ownService({ Auth: { Lockout: { MaxFailedAttempts: MAX_FAILED, Minutes: 15 } } }));

const CALLBACK = 'https://app.example.com/callback';
const PASSWORD = 'correct horse battery 9';

const relyingParty = (clientId: string, secret?: string) => relyingPartyOf(h.api.publicUrl, clientId, secret);

async function putClient(clientId: string, body: Record<string, unknown>) {
  const answer = await h.admin('PUT', `/api/v1/clients/${clientId}`, body);
  if (answer.status !== 200 && answer.status !== 201) throw new Error(`PUT client ${clientId}: ${answer.status}`);
}

const createUser = (label: string, extra: Record<string, unknown> = {}) => createUserWith(h, label, PASSWORD, extra);

async function grantRole(userId: string, role: string) {
  await h.context.db
    .insertInto('roles')
    .values({ id: `role-${role}`, name: role, normalized_name: role.toUpperCase() })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
  await h.context.db
    .insertInto('user_roles')
    .values({ user_id: userId, role_id: `role-${role}` })
    .execute();
}

const flow = codeFlow(CALLBACK);
const startAuthorization = (rp: oidc.Configuration, scope = 'openid', extra: Record<string, string> = {}) =>
  flow.start(rp, scope, extra);
const signIn = (started: Started, email: string, password = PASSWORD) => flow.signIn(started, email, password);
const redeem = flow.tokens;

const adminGet = (token: string) =>
  h.request('GET', '/api/v1/clients', undefined, { authorization: `Bearer ${token}` });

beforeAll(async () => {
  await putClient('sec-web', {
    ClientName: 'Security web',
    ...confidentialClient(CALLBACK, ['openid', 'profile', 'email', 'IdentityAdmin'], 'sec-web-secret-sixteen'),
  });
  await putClient('sec-other', {
    AllowedGrantTypes: ['client_credentials'],
    AllowedScopes: ['IdentityAdmin'],
    ClientSecrets: [{ Value: 'sec-other-secret-sixteen' }],
  });
}, 60_000);

describe('claims from outside never become privileges (item 1)', () => {
  test("an app's Try answer naming role, given_name or org_id is dropped; the user's token is no admin token", async () => {
    h.apps.crm.state.behaviour = {
      assignAttributes: { role: 'IdentityAdmin', Given_Name: 'Mallory', org_id: 'evil-org', team: 'blue' },
    };
    const user = await createUser('minted');
    const stored = await h.context.db
      .selectFrom('users')
      .select(['custom_attributes', 'organization_id'])
      .where('id', '=', user.id)
      .executeTakeFirstOrThrow();
    expect(stored.custom_attributes).toEqual({ team: 'blue' });
    expect(stored.organization_id).toBeNull();

    const rp = await relyingParty('sec-web', 'sec-web-secret-sixteen');
    const started = await startAuthorization(rp, 'openid profile IdentityAdmin');
    const tokens = await redeem(rp, started, await signIn(started, user.email));
    const access = JSON.parse(Buffer.from(tokens.access_token.split('.')[1], 'base64url').toString()) as Record<
      string,
      unknown
    >;
    expect(access.role).toBeUndefined();
    expect(tokens.claims()?.given_name).toBeUndefined();
    expect((await adminGet(tokens.access_token)).status).toBe(403);
  });

  test('an attribute stored with a reserved name (from before the rule) is no claim, and a role claim alone is no privilege', async () => {
    const user = await createUser('legacy-role');
    await h.context.db
      .updateTable('users')
      .set({ custom_attributes: JSON.stringify({ role: 'IdentityAdmin', sub: 'someone-else', team: 'red' }) })
      .where('id', '=', user.id)
      .execute();
    const rp = await relyingParty('sec-web', 'sec-web-secret-sixteen');
    const started = await startAuthorization(rp, 'openid profile IdentityAdmin');
    const tokens = await redeem(rp, started, await signIn(started, user.email));
    expect(tokens.claims()?.sub).toBe(user.id);
    expect((await adminGet(tokens.access_token)).status).toBe(403);
  });

  test('the admin API refuses a reserved attribute name with 400 naming the key', async () => {
    for (const key of [
      'role',
      'ROLE',
      'org_id',
      'email_verified',
      'http://schemas.microsoft.com/ws/2008/06/identity/claims/role',
    ]) {
      const answer = await h.admin('POST', '/api/v1/profile/', {
        email: uniqueEmail('reserved'),
        customAttributes: { [key]: 'x' },
      });
      expect(answer.status).toBe(400);
      expect(answer.body.detail).toContain(`"${key}" is a claim name the service sets itself`);
    }
  });
});

// Issue 37 item 11: .NET's JWT handler maps these short names onto the claims the service sets (nameid and
// unique_name onto the user's id and name, scp onto the scope, upn and groups onto who and which groups).
// The pentest after it: Microsoft.Identity.Web's oid and tid, and the handler's prn, primarysid and actort.
const DOTNET_SHORT_NAMES = [
  'nameid',
  'unique_name',
  'upn',
  'scp',
  'groups',
  'oid',
  'tid',
  'prn',
  'primarysid',
  'actort',
];
const DOTNET_CLAIM_URIS = [
  'http://schemas.microsoft.com/identity/claims/scope',
  'http://schemas.microsoft.com/identity/claims/objectidentifier',
  'http://schemas.microsoft.com/identity/claims/tenantid',
  'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/upn',
  'http://schemas.xmlsoap.org/claims/Group',
];

test('the admin API refuses the short claim names .NET maps onto reserved claims, and their claim URIs', async () => {
  for (const key of [...DOTNET_SHORT_NAMES, 'SCP', ...DOTNET_CLAIM_URIS]) {
    const answer = await h.admin('POST', '/api/v1/profile/', {
      email: uniqueEmail('dotnet-reserved'),
      customAttributes: { [key]: 'x' },
    });
    expect(answer.status).toBe(400);
    expect(answer.body.detail).toContain(`"${key}" is a claim name the service sets itself`);
  }
});

test("a client's claims under an empty ClientClaimsPrefix never produce those names", async () => {
  await putClient('dotnet-claims', {
    ...confidentialClient(CALLBACK, ['openid', 'IdentityAdmin'], 'dotnet-claims-secret!'),
    AlwaysSendClientClaims: true,
    ClientClaimsPrefix: '',
  });
  const claims = [...DOTNET_SHORT_NAMES, ...DOTNET_CLAIM_URIS, 'department'].map((type) => ({ type, value: 'forged' }));
  await h.context.db
    .updateTable('clients')
    .set({ claims: JSON.stringify(claims) })
    .where('client_id', '=', 'dotnet-claims')
    .execute();
  const user = await createUser('dotnet-claims');
  const rp = await relyingParty('dotnet-claims', 'dotnet-claims-secret!');
  const started = await startAuthorization(rp, 'openid IdentityAdmin');
  const tokens = await redeem(rp, started, await signIn(started, user.email));
  const access = JSON.parse(Buffer.from(tokens.access_token.split('.')[1], 'base64url').toString()) as Record<
    string,
    unknown
  >;
  expect(access.department).toBe('forged');
  for (const name of [...DOTNET_SHORT_NAMES, ...DOTNET_CLAIM_URIS]) expect(access[name]).toBeUndefined();
});

describe('a public client never gets client credentials (item 2)', () => {
  test('PUT of a secretless client with client_credentials answers 400 naming the grant', async () => {
    const answer = await h.admin('PUT', '/api/v1/clients/pubcc', {
      RequireClientSecret: false,
      AllowedGrantTypes: ['client_credentials'],
      AllowedScopes: ['IdentityAdmin'],
    });
    expect(answer.status).toBe(400);
    expect(answer.body.detail).toContain('client_credentials needs a client secret');
  });

  test('a stored client in that shape (as a migration could leave it) is refused the grant at the token endpoint', async () => {
    await h.context.db
      .insertInto('clients')
      .values(
        storedClientRow('pubcc-migrated', {
          settings: JSON.stringify({ RequireClientSecret: false }),
          allowed_scopes: JSON.stringify(['IdentityAdmin']),
          grant_types: JSON.stringify(['client_credentials']),
          origin: 'migration',
        }),
      )
      .execute();
    expect(await secretlessClientCredentials(h.api.url, 'pubcc-migrated', 'IdentityAdmin')).toEqual({
      status: 400,
      body: { error: 'invalid_request', error_description: GRANT_NOT_ALLOWED },
    });
  });
});

describe('the lockout holds at the second factor (item 3)', () => {
  test('wrong codes lock the account; after that even the right code is not checked', async () => {
    const user = await createUser('twostep');
    await enrolTotp(
      h.context.db,
      randomUUID(),
      user.id,
      protectSecret(base32Decode(AUTHENTICATOR_KEY), h.context.dataProtection!),
      0,
    );
    const rp = await relyingParty('sec-web', 'sec-web-secret-sixteen');
    const started = await startAuthorization(rp);
    expect(textOf(await signIn(started, user.email))).toMatch(/authenticator/i);
    const right = totp();
    const wrong = right === '000000' ? '111111' : '000000';
    const answers: string[] = [];
    for (let i = 0; i < MAX_FAILED; i++) answers.push(textOf(await started.page.submit('/code', { code: wrong })));
    expect(answers.at(-1)).toContain('this account is locked');
    const afterLock = await started.page.submit('/code', { code: right });
    expect(afterLock).not.toBeInstanceOf(URL);
    expect(textOf(afterLock)).toContain('this account is locked');
    // The code was not checked, so not used either.
    const [credential] = await rowsWhere(h.context.db, 'mfa_credentials', { user_id: user.id, kind: 'totp' });
    expect(Number(credential.last_used_step)).toBe(0);
  });
});

describe('one answer and one duration for every failed password (items 5 and 9)', () => {
  /** ASP.NET Identity's V2 and V3 layouts and BCrypt (cost 10, BCrypt.Net's default is 11), hashed here. */
  function migratedHash(format: 'v2' | 'v3-sha1' | 'bcrypt'): string {
    const salt = createHash('sha256').update(`timing-${format}`).digest().subarray(0, 16);
    if (format === 'bcrypt') return bcrypt.hashSync(PASSWORD, 10);
    if (format === 'v2')
      return Buffer.concat([Buffer.from([0]), salt, pbkdf2Sync(PASSWORD, salt, 1000, 32, 'sha1')]).toString('base64');
    const header = Buffer.alloc(13);
    header.writeUInt8(1, 0);
    header.writeUInt32BE(0, 1);
    header.writeUInt32BE(1000, 5);
    header.writeUInt32BE(16, 9);
    return Buffer.concat([header, salt, pbkdf2Sync(PASSWORD, salt, 1000, 32, 'sha1')]).toString('base64');
  }

  const ROUNDS = 40;
  // [timing]: npm test runs this test on its own, after every other (a test file running beside it would be the noise).
  test('[timing] unknown, native, migrated V2, V3 and BCrypt, no password, deactivated and locked: the same page, medians within 10 ms over 40 interleaved samples', async () => {
    const accounts: Record<string, string> = { unknown: uniqueEmail('nobody') };
    accounts.native = (await createUser('native')).email;
    for (const format of ['v2', 'v3-sha1', 'bcrypt'] as const) {
      const user = await createUser(format);
      await h.context.db
        .updateTable('users')
        .set({ password_hash: migratedHash(format) })
        .where('id', '=', user.id)
        .execute();
      accounts[format] = user.email;
    }
    const none = await createUser('no-password');
    await h.context.db.updateTable('users').set({ password_hash: null }).where('id', '=', none.id).execute();
    accounts['no-password'] = none.email;
    const deactivated = await createUser('deactivated');
    await h.context.db.updateTable('users').set({ active: false }).where('id', '=', deactivated.id).execute();
    accounts.deactivated = deactivated.email;
    accounts.locked = (await createUser('locked')).email;
    const lockedOnly = h.context.db
      .updateTable('users')
      .set({ lockout_end: sql<Date>`now() + interval '1 hour'` })
      .where('email', '=', accounts.locked);
    // The others never reach the lockout: it is its own case.
    const unlockOthers = () =>
      h.context.db
        .updateTable('users')
        .set({ access_failed_count: 0, lockout_end: null })
        .where('email', 'in', Object.values(accounts))
        .where('email', '!=', accounts.locked)
        .execute();
    await lockedOnly.execute();

    const rp = await relyingParty('sec-web', 'sec-web-secret-sixteen');
    const pages: Record<string, Started> = {};
    for (const [kind, email] of Object.entries(accounts)) {
      pages[kind] = await startAuthorization(rp);
      await pages[kind].page.submit('/email', { email });
    }
    const samples: Record<string, number[]> = Object.fromEntries(Object.keys(accounts).map((k) => [k, []]));
    const texts = new Set<string>();
    // Warm-up round (the first BCrypt check sets the floor), then 40 interleaved rounds in a shuffled order each (the
    // issue asks for 30; ten more keep the medians steady while another test file loads the machine).
    for (let round = 0; round <= ROUNDS; round++) {
      const order = Object.keys(accounts).sort(() => Math.random() - 0.5);
      for (const kind of order) {
        await unlockOthers();
        const started = performance.now();
        const answer = await pages[kind].page.submit('/password', { password: 'not the password' });
        const took = performance.now() - started;
        if (round > 0) samples[kind].push(took);
        texts.add(textOf(answer).replace(/.*(The e-mail or password[^.]*\.[^.]*\.).*/, '$1'));
      }
    }
    expect([...texts]).toEqual([
      `The e-mail or password is not right. After ${MAX_FAILED} failed attempts an account is locked for 15 minutes.`,
    ]);
    const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
    const medians = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, Math.round(median(v) * 10) / 10]));
    const spread = Math.max(...Object.values(medians)) - Math.min(...Object.values(medians));
    console.log(`sign-in timing: medians of ${ROUNDS} wrong-password answers (ms) ${JSON.stringify(medians)}`);
    if (spread >= 10) throw new Error(`medians differ by ${spread.toFixed(1)} ms: ${JSON.stringify(medians)}`);
  }, 120_000);
});

describe('parallel guesses do not outrun the lockout (item 6)', () => {
  test('of 30 simultaneous wrong guesses at most MaxFailedAttempts are verified; the right password inside the burst does not sign in after the lock', async () => {
    const user = await createUser('burst');
    const rp = await relyingParty('sec-web', 'sec-web-secret-sixteen');
    const attempts = await Promise.all(
      Array.from({ length: 31 }, async () => {
        const started = await startAuthorization(rp);
        await started.page.submit('/email', { email: user.email });
        return started;
      }),
    );
    const verify = jest.spyOn(passwordFormats, 'verifyAnyPassword');
    try {
      const answers = await Promise.all(
        attempts.map((started, i) =>
          started.page.submit('/password', { password: i === 30 ? PASSWORD : `wrong-${i}` }),
        ),
      );
      const verifiedForUser = verify.mock.calls.length;
      expect(verifiedForUser).toBeLessThanOrEqual(MAX_FAILED);
      // The right password was either one of the few checked, or refused like the rest.
      const signedIn = answers.filter((a) => a instanceof URL);
      expect(signedIn.length).toBeLessThanOrEqual(1);
      if (signedIn.length === 1) expect(answers[30]).toBeInstanceOf(URL);
    } finally {
      verify.mockRestore();
    }
    const stored = await h.context.db
      .selectFrom('users')
      .select('lockout_end')
      .where('id', '=', user.id)
      .executeTakeFirstOrThrow();
    expect(stored.lockout_end).not.toBeNull();
  });

  test('the store reserves at most MaxFailedAttempts of 30 parallel attempts, the last of them locking', async () => {
    const user = await createUser('reserve');
    const reservations = await Promise.all(
      Array.from({ length: 30 }, () => reserveSignInAttempt(h.context.db, user.id, MAX_FAILED, 15)),
    );
    const granted = reservations.filter((r) => r !== undefined);
    expect(granted).toHaveLength(MAX_FAILED);
    expect(granted.filter((r) => r.locked)).toHaveLength(1);
  });
});

describe('codes and refresh tokens are redeemed once, even racing (item 8)', () => {
  test('of two parallel redemptions of one code exactly one succeeds, over 12 trials; the reuse revokes the grant', async () => {
    const user = await createUser('race-code');
    const rp = await relyingParty('sec-web', 'sec-web-secret-sixteen');
    for (let trial = 0; trial < 12; trial++) {
      const started = await startAuthorization(rp, 'openid offline_access');
      const callback = (await signIn(started, user.email)) as URL;
      const results = await Promise.allSettled([redeem(rp, started, callback), redeem(rp, started, callback)]);
      const won = results.filter((r) => r.status === 'fulfilled');
      expect(won).toHaveLength(1);
      const tokens = (won[0] as PromiseFulfilledResult<oidc.TokenEndpointResponse>).value;
      // Reuse detected: the winner's refresh token belongs to a revoked grant.
      await expect(oidc.refreshTokenGrant(rp, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    }
  });

  test('of two parallel redemptions of one refresh token exactly one succeeds, over 12 trials; the reuse revokes the grant', async () => {
    const user = await createUser('race-refresh');
    const rp = await relyingParty('sec-web', 'sec-web-secret-sixteen');
    for (let trial = 0; trial < 12; trial++) {
      const started = await startAuthorization(rp, 'openid offline_access');
      const first = await redeem(rp, started, await signIn(started, user.email));
      const results = await Promise.allSettled([
        oidc.refreshTokenGrant(rp, first.refresh_token!),
        oidc.refreshTokenGrant(rp, first.refresh_token!),
      ]);
      const won = results.filter((r) => r.status === 'fulfilled');
      expect(won).toHaveLength(1);
      const rotated = (won[0] as PromiseFulfilledResult<oidc.TokenEndpointResponse>).value.refresh_token!;
      await expect(oidc.refreshTokenGrant(rp, rotated)).rejects.toMatchObject({ error: 'invalid_grant' });
    }
  });
});

describe('sign-in pages cannot be framed, cached or leak their URL (item 10)', () => {
  test('the e-mail, password, code and account pages and the provider answer with the headers', async () => {
    const rp = await relyingParty('sec-web', 'sec-web-secret-sixteen');
    const { url } = await authorizationRequest(rp, { redirect_uri: CALLBACK, scope: 'openid' });
    const authorize = await fetch(url, { redirect: 'manual' });
    const person = browser(CALLBACK);
    const emailPage = (await person.open(url)) as Visit;
    const uid = new URL(emailPage.url).pathname.split('/')[2];
    const cookie = person.jar.header(emailPage.url);
    const pages = [
      authorize,
      await fetch(emailPage.url, { headers: { cookie } }),
      await fetch(`${h.api.url}/interaction/${uid}/password`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'email=x%40example.test&password=x',
      }),
      await fetch(`${h.api.url}/account/mfa`),
      await fetch(`${h.api.url}/connect/authorize?client_id=nobody`),
    ];
    for (const page of pages) {
      expect(page.headers.get('x-frame-options')).toBe('DENY');
      expect(page.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
      expect(page.headers.get('cache-control')).toContain('no-store');
      expect(page.headers.get('referrer-policy')).toBe('no-referrer');
    }
  });
});

describe('changing how one signs in needs a recent sign-in (item 11)', () => {
  test('/account/mfa after a sign-in older than five minutes asks for the password before it shows an enrolment', async () => {
    const user = await createUser('stale-session');
    const rp = await relyingParty('sec-web', 'sec-web-secret-sixteen');
    const started = await startAuthorization(rp);
    await redeem(rp, started, await signIn(started, user.email));
    const account = browser(CALLBACK, started.page.jar);
    expect(textOf(await account.open(`${h.api.url}/account/mfa`))).toContain('Scan this code');

    // The session's sign-in, twenty minutes ago.
    await h.context.db
      .updateTable('oidc_payloads')
      .set({ payload: sql`jsonb_set(payload, '{loginTs}', to_jsonb(${Math.floor(Date.now() / 1000) - 1200}::int))` })
      .where('model', '=', 'Session')
      .where(sql<boolean>`payload->>'accountId' = ${user.id}`)
      .execute();
    const asked = await account.open(`${h.api.url}/account/mfa`);
    expect(textOf(asked)).toContain('Confirm it is you');
    expect(textOf(asked)).not.toContain('Scan this code');
    // A code form of an earlier page without its sealed enrolment does not enrol either, nor show a new key.
    const token = /name="__RequestVerificationToken" value="([^"]+)"/.exec((asked as Visit).html)![1];
    const direct = await account.post(`${h.api.url}/account/mfa`, {
      pending: 'forged',
      code: '123456',
      __RequestVerificationToken: token,
    });
    expect(textOf(direct)).not.toContain('is on');
    expect(textOf(direct)).toContain('Confirm it is you');
    const wrong = await account.submit('/account/mfa', { password: 'not it' });
    expect((wrong as Visit).status).toBe(400);
    expect(textOf(wrong)).toContain('That password is not right.');
    expect(textOf(await account.submit('/account/mfa', { password: PASSWORD }))).toContain('Scan this code');
  });
});

describe('admin tokens are checked against the store at every request (items 1 and 12)', () => {
  async function adminUserToken() {
    const user = await createUser('admin-user');
    await grantRole(user.id, 'IdentityAdmin');
    const rp = await relyingParty('sec-web', 'sec-web-secret-sixteen');
    const started = await startAuthorization(rp, 'openid IdentityAdmin');
    const tokens = await redeem(rp, started, await signIn(started, user.email));
    expect((await adminGet(tokens.access_token)).status).toBe(200);
    return { user, token: tokens.access_token, rp };
  }

  test("a user's admin token stops working when the role is removed, or the user deactivated", async () => {
    const removed = await adminUserToken();
    await h.context.db.deleteFrom('user_roles').where('user_id', '=', removed.user.id).execute();
    expect((await adminGet(removed.token)).status).toBe(403);

    const deactivated = await adminUserToken();
    await h.context.db.updateTable('users').set({ active: false }).where('id', '=', deactivated.user.id).execute();
    expect((await adminGet(deactivated.token)).status).toBe(403);
  });

  test('an admin token revoked at /connect/revocation stops working; another client cannot revoke it', async () => {
    const { token, rp } = await adminUserToken();
    const other = await relyingParty('sec-other', 'sec-other-secret-sixteen');
    await expect(oidc.tokenRevocation(other, token)).rejects.toThrow();
    expect((await adminGet(token)).status).toBe(200);
    await oidc.tokenRevocation(rp, token);
    expect((await adminGet(token)).status).toBe(401);
  });

  test("a client's admin token stops working when the client loses the scope", async () => {
    const rp = await relyingParty('sec-other', 'sec-other-secret-sixteen');
    const { access_token } = await oidc.clientCredentialsGrant(rp, { scope: 'IdentityAdmin' });
    expect((await adminGet(access_token)).status).toBe(200);
    await putClient('sec-other', {
      AllowedGrantTypes: ['client_credentials'],
      AllowedScopes: ['openid'],
    });
    expect((await adminGet(access_token)).status).toBe(403);
    await putClient('sec-other', {
      AllowedGrantTypes: ['client_credentials'],
      AllowedScopes: ['IdentityAdmin'],
    });
  });
});

describe('a client introspects only its own tokens (item 13)', () => {
  test('another confidential client gets active: false for a token that is not its own', async () => {
    const user = await createUser('introspected');
    const rp = await relyingParty('sec-web', 'sec-web-secret-sixteen');
    const started = await startAuthorization(rp, 'openid offline_access');
    const tokens = await redeem(rp, started, await signIn(started, user.email));
    const other = await relyingParty('sec-other', 'sec-other-secret-sixteen');
    expect(await oidc.tokenIntrospection(other, tokens.refresh_token!)).toMatchObject({ active: false });
    expect(await oidc.tokenIntrospection(rp, tokens.refresh_token!)).toMatchObject({ active: true, sub: user.id });
  });
});

describe('sessions of users who are gone, and switching accounts (items 14 and 15)', () => {
  test("a deactivated user's leftover session ends: the next authorization shows the e-mail page", async () => {
    const user = await createUser('leftover');
    const rp = await relyingParty('sec-web', 'sec-web-secret-sixteen');
    const started = await startAuthorization(rp);
    await redeem(rp, started, await signIn(started, user.email));
    await h.context.db.updateTable('users').set({ active: false }).where('id', '=', user.id).execute();
    const again = browser(CALLBACK, started.page.jar);
    const { url } = await authorizationRequest(rp, { redirect_uri: CALLBACK, scope: 'openid' });
    const page = await again.open(url);
    expect(page).not.toBeInstanceOf(URL);
    expect((page as Visit).status).toBe(200);
    expect(textOf(page)).toContain('E-mail');
  });

  test('prompt=login while signed in lets another account sign in', async () => {
    const first = await createUser('first-account');
    const second = await createUser('second-account');
    const rp = await relyingParty('sec-web', 'sec-web-secret-sixteen');
    const started = await startAuthorization(rp);
    await redeem(rp, started, await signIn(started, first.email));

    const { url, verifier } = await authorizationRequest(rp, { redirect_uri: CALLBACK, scope: 'openid' });
    const switching = browser(CALLBACK, started.page.jar);
    const withPrompt = new URL(url);
    withPrompt.searchParams.set('prompt', 'login');
    const emailPage = await switching.open(withPrompt.href);
    expect(textOf(emailPage)).toContain('E-mail');
    await switching.submit('/email', { email: second.email });
    const callback = await switching.submit('/password', { password: PASSWORD });
    if (!(callback instanceof URL)) throw new Error(`expected the redirect to the client, got: ${textOf(callback)}`);
    const tokens = await oidc.authorizationCodeGrant(rp, callback, { pkceCodeVerifier: verifier });
    expect(tokens.claims()?.sub).toBe(second.id);
  });
});

describe('the rest of the findings', () => {
  test('a password sign-in says amr pwd in the ID token', async () => {
    const user = await createUser('amr');
    const rp = await relyingParty('sec-web', 'sec-web-secret-sixteen');
    const started = await startAuthorization(rp);
    const tokens = await redeem(rp, started, await signIn(started, user.email));
    expect(tokens.claims()).toMatchObject({ sub: user.id, amr: ['pwd'] });
  });

  test('discovery advertises no pushed-authorization endpoint', async () => {
    const discovery = (await (await fetch(`${h.api.url}/.well-known/openid-configuration`)).json()) as Record<
      string,
      unknown
    >;
    expect(discovery.pushed_authorization_request_endpoint).toBeUndefined();
  });

  test("an app's refusal reason reaches the client as capped plain text", async () => {
    await putClient('sec-provisioned', {
      AllowedGrantTypes: ['authorization_code'],
      RedirectUris: [CALLBACK],
      AllowedScopes: ['openid'],
      ClientSecrets: [{ Value: 'sec-provisioned-secret' }],
      ProvisioningApps: ['crm'],
    });
    // A user the app does not hold yet (created with the app refusing nothing, then its record removed).
    const user = await createUser('refused-markup');
    await h.context.db.deleteFrom('user_provisions').where('user_id', '=', user.id).execute();
    h.apps.crm.state.behaviour = { rejectWith: `<script>alert(1)</script><b>no seat</b> "left" ${'x'.repeat(5000)}` };
    const rp = await relyingParty('sec-provisioned', 'sec-provisioned-secret');
    const started = await startAuthorization(rp);
    const denied = (await signIn(started, user.email)) as URL;
    expect(denied).toBeInstanceOf(URL);
    expect(denied.searchParams.get('error')).toBe('access_denied');
    const description = denied.searchParams.get('error_description')!;
    expect(description).toContain('no seat');
    expect(description).not.toMatch(/[<>"\\]/);
    expect(description.length).toBeLessThanOrEqual(200);
  });
});

// Robustness issue, item 16: a stale interaction showed the API's JSON; the unknown-client page said nothing to check.
describe('every page a browser can reach is a page that says what to do', () => {
  test('the Back button after a finished sign-in, and an old link, show the styled page, not JSON', async () => {
    const user = await createUser('back-button');
    const rp = await relyingParty('sec-web', 'sec-web-secret-sixteen');
    const started = await startAuthorization(rp);
    await redeem(rp, started, await signIn(started, user.email));
    const back = await fetch(`${h.api.url}/interaction/${started.uid}`, {
      headers: { cookie: started.page.jar.header(h.api.url) },
    });
    const oldLink = await postForm(
      `${h.api.url}/interaction/${started.uid}/password`,
      'email=x%40example.test&password=x',
    );
    for (const page of [back, oldLink]) {
      expect(page.status).toBe(400);
      expect(page.headers.get('content-type')).toContain('text/html');
      const text = await page.text();
      expect(text).toContain('<!doctype html>');
      expect(text).toContain('This sign-in has expired or was already finished');
    }
  });

  test('an unknown client_id shows plain words and a reference; what to check goes to the log under it', async () => {
    const warn = jest.spyOn(logger, 'warn');
    try {
      const page = await fetch(`${h.api.url}/connect/authorize?client_id=no-such-app&response_type=code&scope=openid`);
      expect(page.status).toBe(400);
      const text = await page.text();
      expect(text).toContain('not set up to sign in here');
      expect(text).not.toContain('check the client_id the application sends');
      const reference = /class="key">([0-9A-F]{8})</.exec(text)![1];
      const line = JSON.stringify(warn.mock.calls.find((call) => JSON.stringify(call).includes(reference)));
      expect(line).toContain('no-such-app');
      expect(line).toContain('check the client_id the application sends');
    } finally {
      warn.mockRestore();
    }
  });
});

// Robustness issue, item 17: sign-in routes were counted as route="unmatched".
test('every sign-in page and provider endpoint of a sign-in is counted under its route template', async () => {
  const before = await counterValue('http_requests_total', { route: 'unmatched' });
  const user = await createUser('metrics');
  const rp = await relyingParty('sec-web', 'sec-web-secret-sixteen');
  const started = await startAuthorization(rp, 'openid offline_access');
  const tokens = await redeem(rp, started, await signIn(started, user.email));
  await oidc.refreshTokenGrant(rp, tokens.refresh_token!);
  await fetch(`${h.api.url}/.well-known/openid-configuration/jwks`);
  await fetch(`${h.api.url}/connect/endsession`, { headers: { cookie: started.page.jar.header(h.api.url) } });
  const metric = metricsRegistry.getSingleMetric('http_requests_total')!;
  const routes = new Set((await metric.get()).values.map((v) => String(v.labels.route)));
  for (const route of [
    '/connect/authorize',
    '/connect/authorize/:uid',
    '/interaction/:uid',
    '/interaction/:uid/email',
    '/interaction/:uid/password',
    '/connect/token',
    '/connect/endsession',
    '/.well-known/openid-configuration/jwks',
  ])
    expect([route, routes.has(route)]).toEqual([route, true]);
  expect(await counterValue('http_requests_total', { route: 'unmatched' })).toBe(before);
});
