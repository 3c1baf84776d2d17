import { randomUUID } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { gzipSync } from 'node:zlib';
import { sql } from 'kysely';
import { createDb, migrateToLatest, type Db } from '../../platform/store/database';
import { hashClientSecret } from '../../platform/security/client-secrets';
import { hashPassword } from '../../platform/security/password-hashing';
import { putClient } from '../../platform/store/clients';
import { createScimToken } from '../../scim/store/scim-tokens';
import { insertUser } from '../../platform/store/users';
import { ADMIN_KEY, serviceProcessEnv, stopAfterAll, uniqueEmail } from '../support/harness';
import { spawnService, waitForOutput, type ServiceProcess } from '../support/service-process';
import { codeFlow } from '../support/code-flow';
import { relyingParty } from '../support/relying-party';
import { postForm } from '../support/sign-in-flow';
import { startMailCatcher, type MailCatcher } from '../support/smtp';

/**
 * Robustness round 3: hostile requests over every route family, against an API in a process of its own (its log is
 * read for what a fault leaves there). No worker: nothing here may need a workflow.
 */
const taskQueue = `test-hostile-${randomUUID()}`;
const PASSWORD = 'correct horse battery';
let api: ServiceProcess;
let url: string;
let db: Db;
let scimToken: string;
let userId: string;
let email: string;
let mail: MailCatcher;

beforeAll(async () => {
  db = createDb(process.env.TEST_DATABASE_URL!, 2);
  await migrateToLatest(db);
  userId = randomUUID();
  email = uniqueEmail('hostile');
  await insertUser(
    db,
    { userId, email, firstName: 'Hos', lastName: 'Tile', organizationId: null, customAttributes: {} },
    await hashPassword(PASSWORD),
  );
  scimToken = (await createScimToken(db, 'hostile requests test')).token;
  mail = await startMailCatcher();
  api = spawnService('api/server.ts', {
    ...serviceProcessEnv(taskQueue),
    PORT: '0',
    LOG_LEVEL: 'info',
    LOG_FORMAT: 'json',
    Oidc__ReloadSeconds: '0',
    Email__Smtp__Host: '127.0.0.1',
    Email__Smtp__Port: String(mail.port),
  });
  url = (await waitForOutput(api, /api: listening on (http:\/\/\S+)/))[1];
}, 90_000);
stopAfterAll(() => [api, db, mail]);

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  body: any;
}

/** node:http, not fetch: any header, any body bytes, any content encoding. */
function send(
  method: string,
  path: string,
  options: { body?: string | Buffer; headers?: Record<string, string>; auth?: string | null } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  const auth =
    options.auth === undefined
      ? path.startsWith('/scim/')
        ? `Bearer ${scimToken}`
        : `Bearer ${ADMIN_KEY}`
      : options.auth;
  if (auth !== null) headers.authorization = auth;
  if (options.body !== undefined && !headers['content-type'])
    headers['content-type'] = path.startsWith('/scim/') ? 'application/scim+json' : 'application/json';
  return new Promise((resolve, reject) => {
    const request = http.request(`${url}${path}`, { method, headers }, (response) => {
      let text = '';
      response.on('data', (chunk) => (text += chunk));
      response.on('end', () => {
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {
          // not JSON; kept as text
        }
        resolve({ status: response.statusCode!, headers: response.headers, text, body });
      });
    });
    request.on('error', reject);
    request.end(options.body);
  });
}

/** The log lines the API wrote since `from` (an offset into its output), parsed. */
const logLinesSince = (from: number): Array<Record<string, any>> =>
  api
    .output()
    .slice(from)
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, any>);

const putClientBody = (clientId: string, body: Record<string, unknown>) =>
  send('PUT', `/api/v1/clients/${encodeURIComponent(clientId)}`, { body: JSON.stringify(body) });

// Item 1: body-parser's refusals on the sign-in and account forms were 500 pages with a stack trace in the log.
describe('a form no page can read is a 4xx on the styled page, and leaves no stack trace', () => {
  const form = 'application/x-www-form-urlencoded';
  test.each([
    ['/account/password', 'six fields', '1=1&2=2&3=3&4=4&5=5&6=6', form, {}, 413, 'more fields'],
    ['/account/password', 'a body over the limit', `current=${'x'.repeat(20_000)}`, form, {}, 413, 'larger than'],
    ['/account/password', 'charset=utf-16', 'current=x', `${form}; charset=utf-16`, {}, 415, 'UTF-16'],
    [
      '/account/password',
      'gzip that does not decode',
      'not gzip at all',
      form,
      { 'content-encoding': 'gzip' },
      400,
      'could not be read',
    ],
    ['/interaction/some-uid/email', 'charset=utf-16', 'email=x', `${form}; charset=utf-16`, {}, 415, 'UTF-16'],
    [
      '/interaction/some-uid/password',
      'a body over the limit',
      `password=${'x'.repeat(20_000)}`,
      form,
      {},
      413,
      'larger than',
    ],
    ['/account/forgot-password', 'six fields', '1=1&2=2&3=3&4=4&5=5&6=6', form, {}, 413, 'more fields'],
    ['/account/reset-password', 'charset=utf-16', 'token=x', `${form}; charset=utf-16`, {}, 415, 'UTF-16'],
    [
      '/account/reset-password',
      'gzip that does not decode',
      'nope',
      form,
      { 'content-encoding': 'gzip' },
      400,
      'could not be read',
    ],
  ])('POST %s with %s', async (path, _label, body, type, extra, status, words) => {
    const from = api.output().length;
    const res = await send('POST', path, { body, headers: { 'content-type': type, ...extra }, auth: null });
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.text).toContain(words);
    expect(res.text).not.toContain('no route');
    await new Promise((r) => setTimeout(r, 100));
    expect(logLinesSince(from).filter((line) => line.err)).toEqual([]);
  });

  test('a good gzip form is still read', async () => {
    const res = await send('POST', '/account/forgot-password', {
      body: gzipSync(`email=${encodeURIComponent(email)}`),
      headers: { 'content-type': form, 'content-encoding': 'gzip' },
      auth: null,
    });
    expect(res.status).toBe(200);
  });

  test('a store fault after the new password was hashed is a logged 500, not a silent 404', async () => {
    const marker = `fault-${randomUUID()}`;
    await sql
      .raw(
        `create function hostile_fault() returns trigger language plpgsql as $$ begin raise exception '${marker}'; end $$;
         create trigger hostile_fault before update of password_hash on users for each row
           when (new.id = '${userId}') execute function hostile_fault();`,
      )
      .execute(db);
    try {
      const forgot = await send('POST', '/account/forgot-password', {
        body: `email=${encodeURIComponent(email)}`,
        headers: { 'content-type': form },
        auth: null,
      });
      expect(forgot.status).toBe(200);
      const link = new URL((await mail.next(email)).links[0]);
      const token = link.searchParams.get('token')!;
      const from = api.output().length;
      const res = await send('POST', '/account/reset-password', {
        body: new URLSearchParams({
          token,
          password: 'a new long password',
          confirm: 'a new long password',
        }).toString(),
        headers: { 'content-type': form, 'x-request-id': `reset-${marker}` },
        auth: null,
      });
      expect(res.status).toBe(500);
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      await new Promise((r) => setTimeout(r, 100));
      const logged = logLinesSince(from).filter((line) => line.err);
      expect(logged).toEqual([
        expect.objectContaining({ reqId: `reset-${marker}`, err: expect.objectContaining({ message: marker }) }),
      ]);
    } finally {
      await sql.raw('drop trigger hostile_fault on users; drop function hostile_fault();').execute(db);
    }
  });
});

const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const formBody = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

// Item 2: a public device client needs no secret, and what it sends was stored unchecked.
describe('every value the provider stores is checked before it is written', () => {
  beforeAll(async () => {
    const res = await putClientBody('hostile-tv', {
      RequireClientSecret: false,
      AllowedGrantTypes: [DEVICE_GRANT],
      AllowedScopes: ['openid'],
    });
    expect(res.status).toBeLessThan(300);
  });

  test.each(['login_hint', 'acr_values', 'ui_locales', 'nonce', 'claims_locales', 'display'])(
    'a NUL in %s at /connect/deviceauthorization: 400 invalid_request naming it',
    async (name) => {
      const res = await send('POST', '/connect/deviceauthorization', {
        body: formBody({ client_id: 'hostile-tv', scope: 'openid', [name]: 'a\0b' }),
        headers: FORM,
        auth: null,
      });
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_request');
      expect(res.body.error_description).toContain(name);
    },
  );

  // Item 6: the provider's own 500s are logged with their cause and the request id.
  test('a fault of the store under the provider is a 500 whose cause is in the log with the request id', async () => {
    const marker = `fault-${randomUUID()}`;
    await sql
      .raw(
        `create function hostile_payload_fault() returns trigger language plpgsql as $$ begin raise exception '${marker}'; end $$;
         create trigger hostile_payload_fault before insert on oidc_payloads for each row
           when (new.payload::text like '%${marker}%') execute function hostile_payload_fault();`,
      )
      .execute(db);
    try {
      const from = api.output().length;
      const res = await send('POST', '/connect/deviceauthorization', {
        body: formBody({ client_id: 'hostile-tv', scope: 'openid', login_hint: marker }),
        headers: { ...FORM, 'x-request-id': `device-${marker}` },
        auth: null,
      });
      expect(res.status).toBe(500);
      expect(res.body.error).toBe('server_error');
      await new Promise((r) => setTimeout(r, 100));
      const logged = logLinesSince(from).filter((line) => line.err);
      expect(logged).toEqual([
        expect.objectContaining({ reqId: `device-${marker}`, err: expect.objectContaining({ message: marker }) }),
      ]);
    } finally {
      await sql
        .raw('drop trigger hostile_payload_fault on oidc_payloads; drop function hostile_payload_fault();')
        .execute(db);
    }
  });
});

// Item 3: lifetimes without an upper bound made every token request of the client a 500.
describe('client lifetimes are bounded when written, and a stored absurd one still works', () => {
  test.each([
    'AccessTokenLifetime',
    'IdentityTokenLifetime',
    'AuthorizationCodeLifetime',
    'AbsoluteRefreshTokenLifetime',
    'SlidingRefreshTokenLifetime',
  ])('%s of 9007199254740991: 400 naming the field and the bound', async (field) => {
    const res = await putClientBody(`lifetime-${field}`, {
      AllowedGrantTypes: ['client_credentials'],
      ClientSecrets: [{ Value: 'lifetime-secret-sixteen' }],
      [field]: 9007199254740991,
    });
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain(field);
    expect(res.body.detail).toContain('315360000');
  });

  const FOREVER = 9007199254740991;
  const storedForever = (clientId: string, extra: Record<string, unknown>) =>
    putClient(
      db,
      {
        client_id: clientId,
        client_name: null,
        enabled: true,
        settings: JSON.stringify({
          AccessTokenLifetime: FOREVER,
          AuthorizationCodeLifetime: FOREVER,
          IdentityTokenLifetime: FOREVER,
          AbsoluteRefreshTokenLifetime: FOREVER,
          AllowOfflineAccess: true,
          ...extra,
        }),
        allowed_scopes: JSON.stringify(['openid', 'IdentityAdmin']),
        grant_types: JSON.stringify(['client_credentials', 'authorization_code']),
        redirect_uris: JSON.stringify(['https://forever.example.test/cb']),
        post_logout_redirect_uris: JSON.stringify([]),
        cors_origins: JSON.stringify([]),
        claims: JSON.stringify([]),
        provisioning_apps: JSON.stringify([]),
        origin: 'migration',
      },
      [{ value: hashClientSecret('forever-secret-sixteen'), description: null, expiration: null }],
    );

  test('a stored client with such lifetimes gets tokens: client credentials, and a sign-in with the code', async () => {
    await storedForever('forever', {});
    const token = await send('POST', '/connect/token', {
      body: formBody({
        grant_type: 'client_credentials',
        client_id: 'forever',
        client_secret: 'forever-secret-sixteen',
        scope: 'IdentityAdmin',
      }),
      headers: FORM,
      auth: null,
    });
    expect(token.status).toBe(200);
    expect(token.body.expires_in).toBeLessThanOrEqual(315360000);
    const rp = await relyingParty(url, 'forever', 'forever-secret-sixteen');
    const flow = codeFlow('https://forever.example.test/cb');
    const started = await flow.start(rp, 'openid offline_access');
    const tokens = await flow.tokens(rp, started, await flow.signIn(started, email, PASSWORD));
    expect(tokens.access_token).toBeTruthy();
    expect(tokens.refresh_token).toBeTruthy();
  });
});

// Item 4: the redirect URI's refinements ran after its failed URL check.
describe('a redirect URI that is not a URL: 400 naming the field', () => {
  test.each(['x', '', 'https://app.example.test:99999/cb', 'https://[::1'])('%j', async (uri) => {
    const res = await putClientBody('bad-uri', {
      AllowedGrantTypes: ['authorization_code'],
      RedirectUris: [uri],
      AllowedScopes: ['openid'],
    });
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain('RedirectUris.0');
  });
});

// Item 5: a PATCH that replaces the whole user with a value that is no resource.
describe('SCIM PATCH replacing the whole user with a non-object: 400 invalidValue', () => {
  test.each([JSON.stringify('x'), '5', 'true'])('value %s', async (value) => {
    const res = await send('PATCH', `/scim/v2/Users/${userId}`, {
      body: `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","path":"","value":${value}}]}`,
    });
    expect(res.status).toBe(400);
    expect(res.body.scimType).toBe('invalidValue');
  });
});

/** A request written on a socket as is: the request line may hold an absolute URL whose host nothing resolves. */
function rawRequest(requestLine: string, body = ''): Promise<{ status: number; body: string }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(target.port), target.hostname);
    let text = '';
    socket.on('data', (chunk) => (text += chunk.toString()));
    socket.on('error', reject);
    socket.on('end', () => {
      const [head, ...rest] = text.split('\r\n\r\n');
      const chunked = /transfer-encoding: chunked/i.test(head);
      const raw = rest.join('\r\n\r\n');
      const decoded = chunked
        ? raw
            .split('\r\n')
            .filter((_, i) => i % 2 === 1)
            .join('')
        : raw;
      resolve({ status: Number(head.split(' ')[1]), body: decoded });
    });
    const headers = [`Host: ${target.host}`, 'Connection: close'];
    if (body)
      headers.push('Content-Type: application/x-www-form-urlencoded', `Content-Length: ${Buffer.byteLength(body)}`);
    socket.write(`${requestLine}\r\n${headers.join('\r\n')}\r\n\r\n${body}`);
  });
}

// Item 7: the request line in absolute form rewrote what the provider hands out.
describe('a request line in absolute form changes no URL the provider hands out', () => {
  test('discovery, the sign-out form and the device flow all start with the public URL', async () => {
    const discovery = await rawRequest('GET http://evil.example.com/.well-known/openid-configuration HTTP/1.1');
    expect(discovery.status).toBe(200);
    expect(discovery.body).not.toContain('evil.example.com');
    expect(JSON.parse(discovery.body).token_endpoint).toBe(`${url}/connect/token`);
    const signOut = await rawRequest('GET http://evil.example.com/connect/endsession HTTP/1.1');
    expect(signOut.status).toBe(200);
    expect(signOut.body).toContain(`action="${url}/connect/endsession/confirm"`);
    expect(signOut.body).not.toContain('evil.example.com');
    const device = await rawRequest(
      'POST http://evil.example.com/connect/deviceauthorization HTTP/1.1',
      formBody({ client_id: 'hostile-tv', scope: 'openid' }),
    );
    expect(device.status).toBe(200);
    expect(JSON.parse(device.body).verification_uri).toBe(`${url}/device`);
    expect(device.body).not.toContain('evil.example.com');
  });
});

// Item 8: settings stored that could never work, or were read otherwise than IdentityServer meant them.
describe('client settings are read as IdentityServer names them, and the unworkable ones are refused', () => {
  test("IdentityServer's enum names are mapped: Sliding, Reference", async () => {
    const res = await putClientBody('enum-names', {
      AllowedGrantTypes: ['client_credentials'],
      ClientSecrets: [{ Value: 'enum-names-secret-16' }],
      RefreshTokenExpiration: 'Sliding',
      AccessTokenType: 'Reference',
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ RefreshTokenExpiration: 0, AccessTokenType: 1 });
    const absolute = await putClientBody('enum-names', {
      AllowedGrantTypes: ['client_credentials'],
      RefreshTokenExpiration: 'Absolute',
      AccessTokenType: 'Jwt',
    });
    expect(absolute.body).toMatchObject({ RefreshTokenExpiration: 1, AccessTokenType: 0 });
  });

  test.each([
    ['an unknown RefreshTokenExpiration', { RefreshTokenExpiration: 'Forever' }, 'RefreshTokenExpiration'],
    ['an unknown AccessTokenType', { AccessTokenType: 'Opaque' }, 'AccessTokenType'],
    ['a scope with a space', { AllowedScopes: ['openid profile'] }, 'AllowedScopes.0'],
    ['5,000 scopes', { AllowedScopes: Array.from({ length: 5000 }, (_, i) => `s${i}`) }, 'AllowedScopes'],
    ['a 50,000-character scope', { AllowedScopes: ['s'.repeat(50_000)] }, 'AllowedScopes.0'],
    ['a redirect URI with user:password', { RedirectUris: ['https://u:p@app.example.test/cb'] }, 'RedirectUris.0'],
    ['a redirect URI with a trailing newline', { RedirectUris: ['https://app.example.test/cb\n'] }, 'RedirectUris.0'],
    ['the CORS origin "null"', { AllowedCorsOrigins: ['null'] }, 'AllowedCorsOrigins.0'],
    ['the CORS origin "*"', { AllowedCorsOrigins: ['*'] }, 'AllowedCorsOrigins.0'],
    ['a CORS origin that is none', { AllowedCorsOrigins: ['not an origin'] }, 'AllowedCorsOrigins.0'],
    ['a CORS origin with a path', { AllowedCorsOrigins: ['https://app.example.test/x'] }, 'AllowedCorsOrigins.0'],
    ['an ESC in the name', { ClientName: 'Evil\u001b[31m' }, 'ClientName'],
    ['a CR/LF in the name', { ClientName: 'Evil\r\nX-Injected: 1' }, 'ClientName'],
  ])('%s: 400 naming the field', async (_label, extra, field) => {
    const res = await putClientBody('unworkable', {
      AllowedGrantTypes: ['authorization_code'],
      RedirectUris: ['https://app.example.test/cb'],
      AllowedScopes: ['openid'],
      ...extra,
    });
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain(field);
  });

  test('an SSO provider named with ESC or CR/LF: 400 naming the field', async () => {
    for (const bad of ['Evil\u001b[31m', 'Evil\r\nX-Injected: 1']) {
      const res = await send('POST', '/api/v1/sso/oidc-providers', {
        body: JSON.stringify({
          id: 'esc-provider',
          name: bad,
          authority: 'https://127.0.0.1:1',
          clientId: 'c',
          domains: ['esc.example.test'],
        }),
      });
      expect(res.status).toBe(400);
      expect(res.body.detail).toContain('name: must not contain control characters');
    }
  });

  test.each(['line\nbreak', 'emoji-\u{1F600}', 'tab\there'])(
    'a client id %j: 400 naming the path parameter clientId',
    async (id) => {
      const res = await putClientBody(id, { AllowedGrantTypes: ['client_credentials'] });
      expect(res.status).toBe(400);
      expect(res.body.detail).toMatch(/^clientId: must be printable ASCII/);
    },
  );

  test('a stored client with the origin "null" gets no CORS answer for it', async () => {
    await putClient(
      db,
      {
        client_id: 'null-origin',
        client_name: null,
        enabled: true,
        settings: JSON.stringify({}),
        allowed_scopes: JSON.stringify(['IdentityAdmin']),
        grant_types: JSON.stringify(['client_credentials']),
        redirect_uris: JSON.stringify([]),
        post_logout_redirect_uris: JSON.stringify([]),
        cors_origins: JSON.stringify(['null']),
        claims: JSON.stringify([]),
        provisioning_apps: JSON.stringify([]),
        origin: 'migration',
      },
      [{ value: hashClientSecret('null-origin-secret-16'), description: null, expiration: null }],
    );
    const res = await send('POST', '/connect/token', {
      body: formBody({
        grant_type: 'client_credentials',
        client_id: 'null-origin',
        client_secret: 'null-origin-secret-16',
      }),
      headers: { ...FORM, origin: 'null' },
      auth: null,
    });
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });
});

// Item 9: what GET shows, PUT takes back.
describe('a client read with GET and written back with PUT keeps what it had', () => {
  test('ClientClaims and the origin of a migrated client survive; ClientClaims can be set', async () => {
    await putClient(
      db,
      {
        client_id: 'migrated-claims',
        client_name: 'Migrated',
        enabled: true,
        settings: JSON.stringify({ AlwaysSendClientClaims: true }),
        allowed_scopes: JSON.stringify(['IdentityAdmin']),
        grant_types: JSON.stringify(['client_credentials']),
        redirect_uris: JSON.stringify([]),
        post_logout_redirect_uris: JSON.stringify([]),
        cors_origins: JSON.stringify([]),
        claims: JSON.stringify([{ type: 'tier', value: 'gold' }]),
        provisioning_apps: JSON.stringify([]),
        origin: 'migration',
      },
      [{ value: hashClientSecret('migrated-claims-secret'), description: null, expiration: null }],
    );
    const read = await send('GET', '/api/v1/clients/migrated-claims');
    expect(read.body).toMatchObject({ ClientClaims: [{ Type: 'tier', Value: 'gold' }], origin: 'migration' });
    const written = await putClientBody('migrated-claims', read.body);
    expect(written.status).toBe(200);
    expect(written.body).toMatchObject({ ClientClaims: [{ Type: 'tier', Value: 'gold' }], origin: 'migration' });
    const changed = await putClientBody('migrated-claims', {
      ...read.body,
      ClientClaims: [{ Type: 'tier', Value: 'silver' }],
    });
    expect(changed.body.ClientClaims).toEqual([{ Type: 'tier', Value: 'silver' }]);
  });

  test("IdentityServer's own secret shape is taken: Value, Type SharedSecret, Description, Expiration", async () => {
    const res = await putClientBody('is-secret-shape', {
      AllowedGrantTypes: ['client_credentials'],
      ClientSecrets: [
        { Value: 'identityserver-shape-secret', Type: 'SharedSecret', Description: 'from IS', Expiration: null },
      ],
    });
    expect(res.status).toBe(201);
    const other = await putClientBody('is-secret-shape', {
      AllowedGrantTypes: ['client_credentials'],
      ClientSecrets: [{ Value: 'identityserver-shape-secret', Type: 'X509Thumbprint' }],
    });
    expect(other.status).toBe(400);
    expect(other.body.detail).toContain('ClientSecrets.0.Type');
  });
});

// Item 12: RFC 6750 §3.1.
describe('the admin API tells a bad token (401 invalid_token) from a token without the right (403)', () => {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const clientToken = async (clientId: string, secret: string) => {
    const res = await postForm(`${url}/connect/token`, {
      grant_type: 'client_credentials',
      client_id: clientId,
      client_secret: secret,
      scope: 'IdentityAdmin',
    });
    return ((await res.json()) as { access_token: string }).access_token;
  };

  test.each([
    ['a wrong key', 'wrong-key'],
    [
      'a JWT whose kid holds NUL',
      `${part({ alg: 'RS256', typ: 'at+jwt', kid: 'k\u0000' })}.${part({ sub: 'x' })}.c2ln`,
    ],
    ['a forged JWT', `${part({ alg: 'RS256', typ: 'at+jwt', kid: 'nope' })}.${part({ sub: 'x' })}.c2ln`],
  ])('%s: 401 with WWW-Authenticate error="invalid_token"', async (_label, token) => {
    const res = await send('GET', '/api/v1/clients', { auth: `Bearer ${token}` });
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/^Bearer .*error="invalid_token"/);
  });

  test('a revoked token: 401; a valid token whose client lost the right: 403 insufficient_scope', async () => {
    const body = {
      AllowedGrantTypes: ['client_credentials'],
      AllowedScopes: ['IdentityAdmin'],
      ClientSecrets: [{ Value: 'rights-client-secret' }],
    };
    expect((await putClientBody('rights-client', body)).status).toBeLessThan(300);
    const revoked = await clientToken('rights-client', 'rights-client-secret');
    expect((await send('GET', '/api/v1/clients', { auth: `Bearer ${revoked}` })).status).toBe(200);
    await postForm(`${url}/connect/revocation`, {
      token: revoked,
      client_id: 'rights-client',
      client_secret: 'rights-client-secret',
    });
    const afterRevocation = await send('GET', '/api/v1/clients', { auth: `Bearer ${revoked}` });
    expect(afterRevocation.status).toBe(401);
    expect(afterRevocation.headers['www-authenticate']).toMatch(/error="invalid_token"/);
    const valid = await clientToken('rights-client', 'rights-client-secret');
    expect((await putClientBody('rights-client', { ...body, AllowedScopes: ['openid'] })).status).toBe(200);
    const lacking = await send('GET', '/api/v1/clients', { auth: `Bearer ${valid}` });
    expect(lacking.status).toBe(403);
    expect(lacking.headers['www-authenticate']).toMatch(/error="insufficient_scope"/);
  });
});
