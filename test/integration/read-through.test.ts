import { createHash, randomBytes } from 'node:crypto';
import * as oidc from 'openid-client';
import { Client as PgClient } from 'pg';
import { createReadThrough } from '../../migration/read-through';
import { connectSource } from '../../migration/source/connection';
import { freePort } from '../../dev/ports';
import { persistedGrantKeys } from '../../platform/security/persisted-grant-keys';
import { FIXTURE_PASSWORD } from '../fixtures/source/generate';
import {
  serviceProcessEnv,
  stopAfterAll,
  UNLIMITED_SIGN_IN,
  useHarness,
  type HarnessOptions,
} from '../support/harness';
import { spawnService, waitForOutput, type ServiceProcess } from '../support/service-process';
import { rowsWhere } from '../support/rows';
import { globexProvider, startUpstreamProvider, type UpstreamProvider } from '../support/upstream-provider';
import { codeFlow } from '../support/code-flow';
import { relyingParty } from '../support/relying-party';
import { counterValue } from '../support/metrics';
import { TEST_ADMIN_URL, useGeneratedSource } from '../support/scratch-store';
import { migrateCompletely } from '../support/migration-runs';
import { grantLifetime, harnessOverProtectedSource, keyRingFolder } from '../support/source-protection';
import { newSourceKey, protectedGrantData, SOURCE_APPLICATION_NAME } from '../support/source-protection';
import { browser, CookieJar, textOf } from '../support/sign-in-flow';
import { sourceCookies } from '../support/source-cookies';
import { smtpTo, useMailCatcher } from '../support/smtp';
import { fixtureTotp } from '../support/totp';

// The cutover's dual read (issue "Cutover without a forced re-login", item 3): after the last sweep, users and refresh
// tokens keep arriving at the source until the clients are repointed. Until Migration:ReadThrough:Until they are read
// through, over a PostgreSQL login that may only SELECT (so any write to the source would fail the test), and adopted.
const APPLICATION_NAME = SOURCE_APPLICATION_NAME;
const ringKey = newSourceKey();
const keyRingPath = keyRingFolder(ringKey);
const READER = `read_through_${randomBytes(4).toString('hex')}`;
let readerUrl = '';

const source = useGeneratedSource(10, async (pg) => {
  const database = (await pg.query<{ db: string }>('select current_database() as db')).rows[0].db;
  await pg.query(`create role ${READER} login`);
  await pg.query(`grant connect on database "${database}" to ${READER}`);
  await pg.query(`grant usage on schema public to ${READER}`);
  await pg.query(`grant select on all tables in schema public to ${READER}`);
  const url = new URL(TEST_ADMIN_URL);
  url.username = READER;
  url.pathname = `/${database}`;
  readerUrl = url.href;
});
afterAll(async () => {
  const admin = new PgClient({ connectionString: TEST_ADMIN_URL });
  await admin.connect();
  // The source database is dropped by now or soon; its grants go with it, and the role is the cluster's.
  await admin.query(`drop role if exists ${READER}`).catch(() => undefined);
  await admin.end();
});

const catcher = useMailCatcher();
const h = useHarness(() => ({
  ...withConfig(
    harnessOverProtectedSource(source().url, keyRingPath, {
      ReadThrough: {
        Until: new Date(Date.now() + 3600_000).toISOString(),
        ConnectionString: readerUrl,
        TimeoutSeconds: 1.5,
        RetryAfterSeconds: 7,
        UnavailableMessage: 'The old sign-in system is being retired; see status.example.com.',
      },
      SourceSessions: { Until: new Date(Date.now() + 3600_000).toISOString() },
    }),
    {
      Auth: UNLIMITED_SIGN_IN,
      Email: { ...smtpTo(catcher()), From: 'Identity <no-reply@example.com>' },
    },
  ),
  // Initrode's own OpenID provider runs on 127.0.0.2.
  allowedInternalTargets: ['127.0.0.1', '127.0.0.2'],
}));
let initrode: UpstreamProvider | undefined;
const apiProcesses: ServiceProcess[] = [];
stopAfterAll(() => [initrode, ...apiProcesses]);

/** The harness's options with more configuration beside theirs. */
function withConfig(options: HarnessOptions, config: Record<string, Record<string, unknown>>): HarnessOptions {
  return { ...options, config: { ...options.config, ...config } };
}

const CALLBACK = 'https://web.example.com/callback';
const flow = codeFlow(CALLBACK);
const userId = (n: number) => `user-${String(n).padStart(8, '0')}`;

/** A user who registered at the source after the last sweep: a copy of fixture user n under a new id and e-mail. */
async function arriveAtSource(pg: PgClient, n: number, id: string, email: string) {
  const from = userId(n);
  await pg.query(
    `insert into "AspNetUsers" ("Id","UserName","NormalizedUserName","Email","NormalizedEmail","EmailConfirmed","PasswordHash","SecurityStamp","ConcurrencyStamp","PhoneNumberConfirmed","TwoFactorEnabled","LockoutEnabled","AccessFailedCount")
     select $2::text, $3::text, upper($3::text), $3::text, upper($3::text), "EmailConfirmed", "PasswordHash", "SecurityStamp", "ConcurrencyStamp", "PhoneNumberConfirmed", "TwoFactorEnabled", "LockoutEnabled", 0
     from "AspNetUsers" where "Id" = $1`,
    [from, id, email],
  );
  await pg.query(
    `insert into "AspNetUserClaims" ("UserId","ClaimType","ClaimValue") select $2::text, "ClaimType", "ClaimValue" from "AspNetUserClaims" where "UserId" = $1`,
    [from, id],
  );
  await pg.query(`insert into "AspNetUserRoles" select $2::text, "RoleId" from "AspNetUserRoles" where "UserId" = $1`, [
    from,
    id,
  ]);
  await pg.query(
    `insert into "AspNetUserLogins" select "LoginProvider", "ProviderKey" || '-late', "ProviderDisplayName", $2::text from "AspNetUserLogins" where "UserId" = $1`,
    [from, id],
  );
  await pg.query(
    `insert into "AspNetUserTokens" select $2::text, "LoginProvider", "Name", "Value" from "AspNetUserTokens" where "UserId" = $1`,
    [from, id],
  );
}

/** A refresh token the source issued (and rotated) after the last sweep, as Duende 6/7 stores one. */
const HANDLE = `${randomBytes(32).toString('hex').toUpperCase()}-1`;
const refreshTokenData = protectedGrantData(
  JSON.stringify({
    ...grantLifetime(),
    Subject: { Claims: [{ Type: 'sub', Value: userId(2) }] },
    Version: 5,
    ClientId: 'web',
    AuthorizedScopes: ['openid', 'profile', 'orders.read', 'offline_access'],
  }),
  ringKey,
);

/** Another, first issued 200 s short of the web client's AbsoluteRefreshTokenLifetime (30 days) ago. */
const AGED_HANDLE = `${randomBytes(32).toString('hex').toUpperCase()}-1`;
const WEB_ABSOLUTE_LIFETIME = 2_592_000;

beforeAll(async () => {
  await migrateCompletely(h, { version: 'before-cutover', migrateClients: true });
  const pg = new PgClient({ connectionString: source().url });
  await pg.connect();
  try {
    await arriveAtSource(pg, 4, 'user-late-4', 'late4@example.com');
    await arriveAtSource(pg, 10, 'user-late-10', 'late10@example.com');
    // A user Initrode's provider signed in at the source after the sweep: an SSO account with its external login.
    await arriveAtSource(pg, 1, 'user-late-sso', 'pat@initrode.example');
    await arriveAtSource(pg, 3, 'user-late-3', 'late3@example.com');
    await arriveAtSource(pg, 6, 'user-late-cookie', 'late-cookie@example.com');
    await pg.query(
      `insert into "AspNetUserLogins" values ('InitrodeScheme', 'initrode-pat', 'Initrode', 'user-late-sso')`,
    );
    await pg.query(
      `insert into "PersistedGrants" ("Key","Type","SubjectId","ClientId","CreationTime","Expiration","Data")
       values ($1, 'refresh_token', $2, 'web', now(), now() + interval '30 days', $3)`,
      [persistedGrantKeys(HANDLE)[0], userId(2), refreshTokenData],
    );
    await pg.query(
      `insert into "PersistedGrants" ("Key","Type","SubjectId","ClientId","CreationTime","Expiration","Data")
       values ($1, 'refresh_token', $2, 'web', now() - make_interval(secs => $4), now() + interval '200 seconds', $3)`,
      [persistedGrantKeys(AGED_HANDLE)[0], userId(2), refreshTokenData, WEB_ABSOLUTE_LIFETIME - 200],
    );
  } finally {
    await pg.end();
  }
}, 120_000);

const signIn = async (email: string) => {
  const rp = await relyingParty(h.api.publicUrl, 'web', 'web-secret');
  const started = await flow.start(rp, 'openid profile');
  return { rp, started, answer: await flow.signIn(started, email, FIXTURE_PASSWORD) };
};

test('a user who registered at the source after the sweep signs in: migrated on the spot with claims, roles and logins', async () => {
  const { rp, started, answer } = await signIn('late4@example.com');
  const tokens = await flow.tokens(rp, started, answer);
  expect(tokens.claims()).toMatchObject({ sub: 'user-late-4' });
  const db = h.context.db;
  const ofUser = <T extends 'users' | 'user_roles' | 'user_logins'>(
    table: T,
    column: T extends 'users' ? 'id' : 'user_id',
  ) =>
    db
      .selectFrom(table as 'user_logins')
      .selectAll()
      .where(column as 'user_id', '=', 'user-late-4')
      .execute();
  expect(await ofUser('users', 'id')).toEqual([
    expect.objectContaining({ first_name: 'Given4', migration_version: 'read-through' }),
  ]);
  expect(await ofUser('user_roles', 'user_id')).toHaveLength(1);
  expect(await ofUser('user_logins', 'user_id')).toEqual([expect.objectContaining({ provider_key: 'g-4-late' })]);
  expect(await counterValue('read_through_total', { kind: 'user', outcome: 'migrated' })).toBe(1);
});

test('a browser signed in at the source by a user who arrived after the sweep is read through and signed in, no page', async () => {
  const rp = await relyingParty(h.api.publicUrl, 'web', 'web-secret');
  const jar = new CookieJar();
  // The fixture's stamp of user 6 (md5 of its number), which the copy at the source keeps; the key ring is the folder.
  const fixture = { userId: 'user-late-cookie', email: 'late-cookie@example.com', sessionId: 'LATE-SID' };
  const stamp = createHash('md5').update('6').digest('hex');
  for (const [name, value] of Object.entries(sourceCookies({ ...fixture, stamp }, ringKey)))
    jar.set(h.api.publicUrl, name, value);
  const state = oidc.randomState();
  const verifier = oidc.randomPKCECodeVerifier();
  const url = oidc.buildAuthorizationUrl(rp, {
    redirect_uri: CALLBACK,
    scope: 'openid profile',
    state,
    prompt: 'none',
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  const answer = await browser(CALLBACK, jar).open(url.href);
  expect(answer).toBeInstanceOf(URL);
  const tokens = await oidc.authorizationCodeGrant(rp, answer as URL, {
    pkceCodeVerifier: verifier,
    expectedState: state,
  });
  expect(tokens.claims()).toMatchObject({ sub: 'user-late-cookie', sid: 'LATE-SID' });
});

test("a late user with two-step verification at the source is asked for the code of the source's authenticator key", async () => {
  const { rp, started, answer } = await signIn('late10@example.com');
  expect(textOf(answer)).toMatch(/code/i);
  const tokens = await flow.tokens(rp, started, await started.page.submit('/code', { code: fixtureTotp() }));
  expect(tokens.claims()).toMatchObject({ sub: 'user-late-10', amr: ['pwd', 'mfa'] });
});

test("a user the source's SSO provider signed in after the sweep signs in through it here: found, not made twice", async () => {
  initrode = await startUpstreamProvider('127.0.0.2', `${h.api.publicUrl}/oidc/callback`);
  const registered = await h.admin('POST', '/api/v1/sso/oidc-providers', {
    ...globexProvider(initrode, 'initrode', 'initrode.example'),
    name: 'Initrode',
    loginProviderNames: ['InitrodeScheme'],
  });
  expect(registered.status).toBe(201);
  initrode.next = { sub: 'initrode-pat', email: 'pat@initrode.example' };
  const rp = await relyingParty(h.api.publicUrl, 'web', 'web-secret');
  const started = await flow.start(rp, 'openid');
  const atInitrode = await started.page.submit('/email', { email: 'pat@initrode.example' });
  expect(textOf(atInitrode)).toContain('Continue as pat@initrode.example');
  const tokens = await flow.tokens(rp, started, await started.page.submit('/login', {}));
  expect(tokens.claims()).toMatchObject({ sub: 'user-late-sso', amr: ['external'] });
  expect(await rowsWhere(h.context.db, 'users', { email: 'pat@initrode.example' })).toHaveLength(1);
});

test('registering an address the source holds meets that user, migrated now, as it would after a sweep', async () => {
  const registered = await h.request('POST', '/api/auth/register', {
    email: 'late3@example.com',
    password: 'someone else 12345',
  });
  expect(registered.status).toBe(409);
  expect(await rowsWhere(h.context.db, 'users', { email: 'late3@example.com' })).toEqual([
    expect.objectContaining({ id: 'user-late-3', migration_version: 'read-through' }),
  ]);
  // The owner signs in with the password the source knew.
  const { rp, started, answer } = await signIn('late3@example.com');
  expect((await flow.tokens(rp, started, answer)).claims()).toMatchObject({ sub: 'user-late-3' });
});

test('an address the source does not know either is refused as any unknown address is', async () => {
  const { answer } = await signIn('nobody-anywhere@example.com');
  expect(answer).not.toBeInstanceOf(URL);
  expect(textOf(answer)).toMatch(/not right|incorrect|wrong/i);
  expect(await counterValue('read_through_total', { kind: 'user', outcome: 'not-found' })).toBeGreaterThanOrEqual(1);
});

test('a refresh token the source issued after the sweep is read through and redeemed by its handle', async () => {
  const rp = await relyingParty(h.api.publicUrl, 'web', 'web-secret');
  const tokens = await oidc.refreshTokenGrant(rp, HANDLE);
  expect(tokens.claims()).toMatchObject({ sub: userId(2) });
  expect(await counterValue('read_through_total', { kind: 'refresh-token', outcome: 'adopted' })).toBe(1);
  await expect(oidc.refreshTokenGrant(rp, HANDLE)).rejects.toMatchObject({ error: 'invalid_grant' });
  await expect(oidc.refreshTokenGrant(rp, `${'0'.repeat(64)}-1`)).rejects.toMatchObject({ error: 'invalid_grant' });
  expect(
    await counterValue('read_through_total', { kind: 'refresh-token', outcome: 'not-found' }),
  ).toBeGreaterThanOrEqual(1);
});

// Issue 37 item 2: the successor of a token read through had the whole AbsoluteRefreshTokenLifetime again.
test('a refresh token read through keeps its first issue: with 200 s left at the source, its successor has 200 s', async () => {
  const rp = await relyingParty(h.api.publicUrl, 'web', 'web-secret');
  const tokens = await oidc.refreshTokenGrant(rp, AGED_HANDLE);
  const stored = await h.context.db
    .selectFrom('oidc_payloads')
    .select('expires_at')
    .where('model', '=', 'RefreshToken')
    .where('id', '=', tokens.refresh_token!)
    .executeTakeFirstOrThrow();
  expect(stored.expires_at!.getTime() - Date.now()).toBeLessThanOrEqual(200_000);
});

/**
 * A read-through over a source nothing answers (a loopback port no server listens on): every query fails, so a read
 * would be counted as an error.
 */
async function overClosedSource(until: Date) {
  const unreachable = connectSource(`postgres://postgres@127.0.0.1:${await freePort()}/none`).db;
  closeAfterwards.push(() => unreachable.destroy());
  return createReadThrough({
    target: h.context.db,
    source: unreachable,
    until,
    dataProtection: h.context.dataProtection!,
    sourceDataProtection: { ApplicationName: APPLICATION_NAME, KeyRingPath: keyRingPath },
    budget: { permitLimit: 1000, windowSeconds: 60 },
    timeoutMs: 1000,
  });
}
const closeAfterwards: Array<() => Promise<void>> = [];
afterAll(() => Promise.all(closeAfterwards.map((close) => close())));
const errors = () =>
  Promise.all([
    counterValue('read_through_total', { kind: 'user', outcome: 'error' }),
    counterValue('read_through_total', { kind: 'refresh-token', outcome: 'error' }),
  ]);

test('a source that cannot be read fails the look-up, not the request, and says so', async () => {
  const failing = await overClosedSource(new Date(Date.now() + 60_000));
  const before = await errors();
  await expect(failing.user('late4@example.com')).resolves.toBe('unavailable');
  await expect(failing.refreshToken(HANDLE)).resolves.toBe(false);
  expect(await errors()).toEqual([before[0] + 1, before[1] + 1]);
});

test('after the deadline nothing reads the source', async () => {
  const over = await overClosedSource(new Date(Date.now() - 1000));
  const before = await errors();
  await expect(over.user('late4@example.com')).resolves.toBe('absent');
  await expect(over.refreshToken(HANDLE)).resolves.toBe(false);
  expect(over.open()).toBe(false);
  expect(await errors()).toEqual(before);
});

// Sign-in security round 3 (issue 37, items 3, 4 and 7): what the window must not do.

/** Runs `work` with a client of the source's owner (the read-only login cannot change it). */
async function atSource<T>(work: (pg: PgClient) => Promise<T>): Promise<T> {
  const pg = new PgClient({ connectionString: source().url });
  await pg.connect();
  try {
    return await work(pg);
  } finally {
    await pg.end();
  }
}

/** A refresh token the source issued to user n (issued now by the source's clock): its handle. */
async function sourceRefreshToken(n: number): Promise<string> {
  const handle = `${randomBytes(32).toString('hex').toUpperCase()}-1`;
  const data = protectedGrantData(
    JSON.stringify({
      ...grantLifetime(),
      Subject: { Claims: [{ Type: 'sub', Value: userId(n) }] },
      Version: 5,
      ClientId: 'web',
      AuthorizedScopes: ['openid', 'profile', 'orders.read', 'offline_access'],
    }),
    ringKey,
  );
  await atSource((pg) =>
    pg.query(
      `insert into "PersistedGrants" ("Key","Type","SubjectId","ClientId","CreationTime","Expiration","Data")
       values ($1, 'refresh_token', $2, 'web', now(), now() + interval '30 days', $3)`,
      [persistedGrantKeys(handle)[0], userId(n), data],
    ),
  );
  return handle;
}

const refresh = async (handle: string) =>
  oidc.refreshTokenGrant(await relyingParty(h.api.publicUrl, 'web', 'web-secret'), handle);
const usersPassWarnings = (report: Awaited<ReturnType<typeof migrateCompletely>>) =>
  report.passes.find((p) => p.pass === 'users')!.warnings.join('\n');

describe('a user deleted or deactivated here stays gone', () => {
  test('a deleted user is not read through at sign-in, nor swept back (CreateOnly or Upsert), nor its source refresh token adopted', async () => {
    const handle = await sourceRefreshToken(5);
    expect((await h.admin('DELETE', `/api/v1/profile/${userId(5)}`)).status).toBe(204);
    const { answer } = await signIn('user5@example.com');
    expect(answer).not.toBeInstanceOf(URL);
    expect(await rowsWhere(h.context.db, 'users', { id: userId(5) })).toEqual([]);
    expect(await counterValue('read_through_total', { kind: 'user', outcome: 'tombstoned' })).toBe(1);
    await expect(refresh(handle)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect(await counterValue('read_through_total', { kind: 'refresh-token', outcome: 'tombstoned' })).toBe(1);
    for (const usersMode of ['CreateOnly', 'Upsert'] as const) {
      const report = await migrateCompletely(h, {
        version: `after-delete-${usersMode}`,
        usersMode,
        migrateRefreshTokens: true,
      });
      expect(usersPassWarnings(report)).toMatch(/1 user\(s\) deleted or deactivated here were not migrated again/);
      expect(await rowsWhere(h.context.db, 'users', { id: userId(5) })).toEqual([]);
    }
    // The sweeps carried the source's token over again: still not adopted.
    await expect(refresh(handle)).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  test('a user deactivated through SCIM keeps what the service holds: an Upsert sweep writes neither the user nor its roles', async () => {
    const token = (await h.admin('POST', '/api/v1/scim/tokens', { description: 'idp' })).body.token as string;
    const patched = await h.request(
      'PATCH',
      `/scim/v2/Users/${userId(6)}`,
      JSON.stringify({
        schemas: ['urn:ietf:params:scim:api:messages:2.0:PatchOp'],
        Operations: [{ op: 'replace', value: { active: false, 'name.givenName': 'Renamed' } }],
      }),
      { authorization: `Bearer ${token}`, 'content-type': 'application/scim+json' },
    );
    expect(patched.status).toBe(200);
    // An operator took the user's roles away before the deactivation.
    await h.context.db.deleteFrom('user_roles').where('user_id', '=', userId(6)).execute();
    await migrateCompletely(h, { version: 'after-deactivation', usersMode: 'Upsert' });
    expect(await rowsWhere(h.context.db, 'users', { id: userId(6) })).toEqual([
      expect.objectContaining({ active: false, first_name: 'Renamed' }),
    ]);
    expect(await rowsWhere(h.context.db, 'user_roles', { user_id: userId(6) })).toEqual([]);
  });

  test('an on-the-spot migration writes roles only for the user it made in that step', async () => {
    // user-late-4 was read through earlier; here it moved to another address and lost its roles.
    await h.context.db
      .updateTable('users')
      .set({ email: 'moved4@example.com', normalized_email: 'MOVED4@EXAMPLE.COM' })
      .where('id', '=', 'user-late-4')
      .execute();
    await h.context.db.deleteFrom('user_roles').where('user_id', '=', 'user-late-4').execute();
    const { answer } = await signIn('late4@example.com');
    expect(answer).not.toBeInstanceOf(URL);
    expect(await rowsWhere(h.context.db, 'user_roles', { user_id: 'user-late-4' })).toEqual([]);
  });
});

describe('ending sessions here reaches the source refresh tokens', () => {
  test("after an admin ends a user's sessions, a token the source issued before is refused; one issued after works", async () => {
    const before = await sourceRefreshToken(7);
    expect((await h.admin('DELETE', `/api/v1/profile/${userId(7)}/sessions`)).status).toBe(204);
    await expect(refresh(before)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect(await counterValue('read_through_total', { kind: 'refresh-token', outcome: 'signed-out' })).toBe(1);
    const after = await sourceRefreshToken(7);
    expect((await refresh(after)).claims()).toMatchObject({ sub: userId(7) });
  });

  test('a password reset here (the same end of every session) also ends the source refresh tokens issued before it', async () => {
    const before = await sourceRefreshToken(3);
    expect((await h.admin('POST', `/api/v1/profile/${userId(3)}/password-reset`)).status).toBe(202);
    const page = browser(CALLBACK);
    await page.open((await catcher().next('user3@example.com')).links[0]);
    const password = 'A brand new passphrase 2468';
    const done = await page.submit('/account/reset-password', { password, confirm: password });
    expect(textOf(done)).toContain('Your password is changed');
    await expect(refresh(before)).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  test('a token the sweep carried over that the source has since consumed or revoked is not redeemed once', async () => {
    const [consumed, revoked, live] = [
      await sourceRefreshToken(8),
      await sourceRefreshToken(8),
      await sourceRefreshToken(8),
    ];
    await migrateCompletely(h, { version: 'tokens-sweep', migrateRefreshTokens: true });
    await atSource(async (pg) => {
      await pg.query(`update "PersistedGrants" set "ConsumedTime" = now() where "Key" = $1`, [
        persistedGrantKeys(consumed)[0],
      ]);
      await pg.query(`delete from "PersistedGrants" where "Key" = $1`, [persistedGrantKeys(revoked)[0]]);
    });
    await expect(refresh(consumed)).rejects.toMatchObject({ error: 'invalid_grant' });
    await expect(refresh(revoked)).rejects.toMatchObject({ error: 'invalid_grant' });
    // A source that cannot say is no licence to adopt: the client is told to try again and keeps its token.
    await atSource((pg) => pg.query(`revoke select on "PersistedGrants" from ${READER}`));
    try {
      const failed = await refresh(live).then(
        () => undefined,
        (error: { cause?: Response }) => error,
      );
      expect(failed?.cause?.status).toBe(500);
    } finally {
      await atSource((pg) => pg.query(`grant select on "PersistedGrants" to ${READER}`));
    }
    expect((await refresh(live)).claims()).toMatchObject({ sub: userId(8) });
  });
});

describe('read-through fails closed where accounts are made', () => {
  test('with the source unreadable, registration and a federated sign-in answer 503 with Retry-After and make nothing', async () => {
    await atSource((pg) => pg.query(`revoke select on "AspNetUsers" from ${READER}`));
    try {
      const registered = await h.request('POST', '/api/auth/register', {
        email: 'new-while-down@example.com',
        password: 'someone new 12345',
      });
      expect(registered.status).toBe(503);
      expect(registered.headers.get('retry-after')).toBe('7');
      expect(registered.body.detail).toMatch(/^email: .*The old sign-in system is being retired/);
      initrode!.next = { sub: 'initrode-new', email: 'new@initrode.example' };
      const rp = await relyingParty(h.api.publicUrl, 'web', 'web-secret');
      const started = await flow.start(rp, 'openid');
      await started.page.submit('/email', { email: 'new@initrode.example' });
      const refused = await started.page.submit('/login', {});
      expect(refused).toMatchObject({ status: 503 });
      expect(textOf(refused)).toContain('The old sign-in system is being retired; see status.example.com.');
    } finally {
      await atSource((pg) => pg.query(`grant select on "AspNetUsers" to ${READER}`));
    }
    expect(await rowsWhere(h.context.db, 'users', { email: 'new-while-down@example.com' })).toEqual([]);
    expect(await rowsWhere(h.context.db, 'users', { email: 'new@initrode.example' })).toEqual([]);
  });

  test('an address the source holds twice is not registered here a third time', async () => {
    await atSource(async (pg) => {
      await arriveAtSource(pg, 6, 'user-twice-a', 'twice@example.com');
      await arriveAtSource(pg, 9, 'user-twice-b', 'twice-b@example.com');
      await pg.query(
        `update "AspNetUsers" set "Email" = 'Twice@example.com', "NormalizedEmail" = 'TWICE@EXAMPLE.COM' where "Id" = 'user-twice-b'`,
      );
    });
    const registered = await h.request('POST', '/api/auth/register', {
      email: 'twice@example.com',
      password: 'someone else 12345',
    });
    expect(registered.status).toBe(503);
    expect(await rowsWhere(h.context.db, 'users', { email: 'twice@example.com' })).toEqual([]);
  });
});

describe('a source that is slow or asked too often', () => {
  /** How long the password step of a sign-in takes (the e-mail step before it is not timed). */
  async function passwordStepTakes(email: string, password: string): Promise<number> {
    const rp = await relyingParty(h.api.publicUrl, 'web', 'web-secret');
    const started = await flow.start(rp, 'openid');
    await started.page.submit('/email', { email });
    const from = performance.now();
    await started.page.submit('/password', { password });
    return performance.now() - from;
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

  test('a look-up fails within Migration:ReadThrough:TimeoutSeconds and does not become the floor other sign-ins wait for', async () => {
    const locker = new PgClient({ connectionString: source().url });
    await locker.connect();
    await locker.query('begin');
    await locker.query('lock table "AspNetUsers" in access exclusive mode');
    // Without a timeout every look-up would wait for this lock; it is let go after 8 s whatever happens.
    const release = setTimeout(() => void locker.query('rollback').finally(() => locker.end()), 8_000);
    try {
      const from = performance.now();
      const registered = await h.request('POST', '/api/auth/register', {
        email: 'while-slow@example.com',
        password: 'someone new 12345',
      });
      expect(registered.status).toBe(503);
      expect(performance.now() - from).toBeLessThan(4_000);
      // Interleaved: an address unknown here (its look-up waits out the 1.5 s timeout) and a known user's wrong password.
      const known: number[] = [];
      for (let i = 0; i < 5; i++) {
        expect(await passwordStepTakes(`slow-${i}@example.com`, 'wrong password 1')).toBeGreaterThanOrEqual(1_400);
        known.push(await passwordStepTakes('user9@example.com', 'wrong password 1'));
      }
      expect(median(known)).toBeLessThan(1_000);
    } finally {
      clearTimeout(release);
      await locker.query('rollback').catch(() => undefined);
      await locker.end().catch(() => undefined);
    }
  }, 60_000);

  test('the look-up budget holds for every instance together: it is kept in the store', async () => {
    const reader = connectSource(readerUrl).db;
    closeAfterwards.push(() => reader.destroy());
    const instance = () =>
      createReadThrough({
        target: h.context.db,
        source: reader,
        until: new Date(Date.now() + 60_000),
        dataProtection: h.context.dataProtection!,
        sourceDataProtection: { ApplicationName: APPLICATION_NAME, KeyRingPath: keyRingPath },
        budget: { permitLimit: 3, windowSeconds: 3600 },
        timeoutMs: 1000,
      });
    const [a, b] = [instance(), instance()];
    const overBudget = () =>
      Promise.all([
        counterValue('read_through_total', { kind: 'refresh-token', outcome: 'over-budget' }),
        counterValue('read_through_total', { kind: 'user', outcome: 'over-budget' }),
      ]);
    const before = await overBudget();
    const unknown = () => `${randomBytes(32).toString('hex').toUpperCase()}-1`;
    for (const instance of [a, b, a]) await expect(instance.refreshToken(unknown())).resolves.toBe(false);
    expect(await overBudget()).toEqual(before);
    await expect(b.refreshToken(unknown())).resolves.toBe(false);
    await expect(a.user('late3@example.com')).resolves.toBe('unavailable');
    expect(await overBudget()).toEqual([before[0] + 1, before[1] + 1]);
  });
});

test('two API processes share one look-up budget: unknown refresh handles past it reach neither source', async () => {
  const metricsPorts = [await freePort(), await freePort()];
  const env = (metricsPort: number) => ({
    ...serviceProcessEnv(`test-read-through-${randomBytes(4).toString('hex')}`),
    DATABASE_URL: h.config.Database.Url!,
    PORT: '0',
    Metrics__Port: String(metricsPort),
    Migration__ReadThrough__Until: new Date(Date.now() + 3600_000).toISOString(),
    Migration__ReadThrough__ConnectionString: readerUrl,
    Migration__ReadThrough__PermitLimit: '3',
    Migration__ReadThrough__WindowSeconds: '7200',
    Migration__SourceDataProtection__ApplicationName: APPLICATION_NAME,
    Migration__SourceDataProtection__KeyRingPath: keyRingPath,
  });
  apiProcesses.push(...metricsPorts.map((port) => spawnService('api/server.ts', env(port))));
  const urls = await Promise.all(
    apiProcesses.map(async (api) => (await waitForOutput(api, /api: listening on (http:\/\/\S+?)[ "]/))[1]),
  );
  const refreshAt = (url: string) =>
    fetch(`${url}/connect/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from('web:web-secret').toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: `${randomBytes(32).toString('hex').toUpperCase()}-1`,
      }),
    });
  for (const url of [urls[0], urls[1], urls[0], urls[1]]) expect((await refreshAt(url)).status).toBe(400);
  const counted = async (port: number, outcome: string) => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const line = new RegExp(`read_through_total\\{kind="refresh-token",outcome="${outcome}"\\} (\\d+)`).exec(text);
    return Number(line?.[1] ?? 0);
  };
  // Three look-ups reached the source between them; the fourth, at the second process, was over the shared budget.
  expect((await counted(metricsPorts[0], 'not-found')) + (await counted(metricsPorts[1], 'not-found'))).toBe(3);
  expect(await counted(metricsPorts[1], 'over-budget')).toBe(1);
}, 120_000);
