import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { Client, Connection } from '@temporalio/client';
import { freePort } from '../../dev/ports';
import { createDb, migrateToLatest, type Db } from '../../platform/store/database';
import { createScimToken } from '../../scim/store/scim-tokens';
import { insertUser } from '../../platform/store/users';
import { ADMIN_KEY, serviceProcessEnv, stopAfterAll, uniqueEmail } from '../support/harness';
import { spawnService, waitForOutput, type ServiceProcess } from '../support/service-process';

/**
 * The API in a process of its own (no worker: nothing here may start a workflow), attacked as a client would.
 * Prototype pollution in this process would switch off authentication for every later request; in the test runner's
 * own process it would poison every other test, so none of it runs here.
 */
const PUBLIC_URL = 'https://id.example.test/base';
const taskQueue = `test-edge-${randomUUID()}`;
let api: ServiceProcess;
let url: string;
let db: Db;
let scimToken: string;
let userId: string;

const serviceEnv = (extra: Record<string, string> = {}) => ({
  ...serviceProcessEnv(taskQueue),
  PORT: '0',
  Provisioning__AppProvider: 'Store',
  Api__PublicUrl: PUBLIC_URL,
  ...extra,
});

beforeAll(async () => {
  db = createDb(process.env.TEST_DATABASE_URL!, 2);
  await migrateToLatest(db);
  userId = randomUUID();
  await insertUser(
    db,
    {
      userId,
      email: uniqueEmail('edge'),
      firstName: 'Edge',
      lastName: 'Case',
      organizationId: null,
      customAttributes: {},
    },
    null,
  );
  scimToken = (await createScimToken(db, 'edge security test')).token;
  api = spawnService('api/server.ts', serviceEnv());
  url = (await waitForOutput(api, /api: listening on (http:\/\/\S+)/))[1];
});
stopAfterAll(() => [api, db]);

async function send(
  method: string,
  path: string,
  options: { body?: string; type?: string; auth?: string | null; host?: string } = {},
) {
  const headers: Record<string, string> = {};
  if (options.body !== undefined)
    headers['content-type'] =
      options.type ?? (path.startsWith('/scim/') ? 'application/scim+json' : 'application/json');
  const auth =
    options.auth === undefined
      ? path.startsWith('/scim/')
        ? `Bearer ${scimToken}`
        : `Bearer ${ADMIN_KEY}`
      : options.auth;
  if (auth !== null) headers.authorization = auth;
  if (options.host) headers.host = options.host;
  // node:http, not fetch: a test must be able to send any Host header and any path bytes.
  return new Promise<{ status: number; type: string; body: any }>((resolve, reject) => {
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
        resolve({ status: response.statusCode!, type: String(response.headers['content-type']), body });
      });
    });
    request.on('error', reject);
    request.end(options.body);
  });
}

const patch = (operations: string) =>
  `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[${operations}]}`;

async function expectAuthenticationIntact(): Promise<void> {
  expect((await send('GET', '/scim/v2/Users', { auth: null })).status).toBe(401);
  expect((await send('GET', `/api/v1/profile/${userId}`, { auth: null })).status).toBe(401);
  expect((await send('GET', `/api/v1/profile/${userId}`, { auth: 'Bearer wrong-key' })).status).toBe(401);
}

describe('prototype pollution is refused at the edge, and authentication stays intact', () => {
  test.each([
    ['__proto__ path', '{"op":"add","path":"__proto__.authorization","value":"Bearer TOKEN"}'],
    ['constructor.prototype path', '{"op":"add","path":"constructor.prototype.authorization","value":"Bearer TOKEN"}'],
    ['nested __proto__ path', '{"op":"add","path":"name.__proto__.authorization","value":"Bearer TOKEN"}'],
    [
      '__proto__ after a value filter',
      '{"op":"replace","path":"emails[type eq \\"work\\"].__proto__.authorization","value":"x"}',
    ],
    [
      'URN-qualified __proto__',
      '{"op":"add","path":"urn:ietf:params:scim:schemas:core:2.0:User:__proto__.authorization","value":"x"}',
    ],
    ['capitalised Constructor', '{"op":"add","path":"Constructor.Prototype.authorization","value":"x"}'],
  ])('PATCH with a %s: 400 invalidPath', async (_label, operation) => {
    const res = await send('PATCH', `/scim/v2/Users/${userId}`, { body: patch(operation.replace('TOKEN', scimToken)) });
    expect(res.status).toBe(400);
    expect(res.type).toMatch(/^application\/scim\+json/);
    expect(res.body).toMatchObject({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'],
      status: '400',
      scimType: 'invalidPath',
    });
    await expectAuthenticationIntact();
  });

  test.each([
    [
      'a __proto__ key in a value',
      '{"op":"add","value":{"__proto__":{"authorization":"Bearer TOKEN"}}}',
      'Operations[0].value.__proto__',
    ],
    [
      'a dotted key through __proto__',
      '{"op":"add","value":{"name.__proto__.authorization":"Bearer TOKEN"}}',
      'Operations[0].value.name.__proto__.authorization',
    ],
    [
      'a constructor key',
      '{"op":"replace","value":{"constructor":{"prototype":{"authorization":"Bearer TOKEN"}}}}',
      'Operations[0].value.constructor',
    ],
  ])('PATCH with %s: 400 naming the key', async (_label, operation, field) => {
    const res = await send('PATCH', `/scim/v2/Users/${userId}`, { body: patch(operation.replace('TOKEN', scimToken)) });
    expect(res.status).toBe(400);
    expect(res.body.scimType).toBe('invalidPath');
    expect(res.body.detail).toContain(field);
    await expectAuthenticationIntact();
  });

  test('a filter on a prototype name is refused; the same word as a value is only a value', async () => {
    const refused = await send('GET', `/scim/v2/Users?filter=${encodeURIComponent('__proto__.authorization eq "x"')}`);
    expect(refused.status).toBe(400);
    expect(refused.body.scimType).toBe('invalidFilter');
    const value = await send('GET', `/scim/v2/Users?filter=${encodeURIComponent('userName eq "constructor"')}`);
    expect(value.status).toBe(200);
    expect(value.body.totalResults).toBe(0);
  });

  test('admin and registration bodies with prototype keys: 400 problem+json naming the field', async () => {
    const admin = await send('POST', '/api/v1/profile/', {
      body: '{"email":"p@example.test","customAttributes":{"__proto__":{"polluted":"yes"}}}',
    });
    expect(admin.status).toBe(400);
    expect(admin.type).toMatch(/^application\/problem\+json/);
    expect(admin.body.detail).toBe('customAttributes.__proto__: this key name is not allowed');
    const registration = await send('POST', '/api/auth/register', {
      auth: null,
      body: '{"email":"p@example.test","password":"long enough","constructor":{"prototype":{"x":1}}}',
    });
    expect(registration.status).toBe(400);
    expect(registration.body.detail).toBe('constructor: this key name is not allowed');
    await expectAuthenticationIntact();
  });

  test('an ordinary PATCH still works', async () => {
    const res = await send('PATCH', `/scim/v2/Users/${userId}`, {
      body: patch('{"op":"replace","path":"name.givenName","value":"Edgar"}'),
    });
    expect(res.status).toBe(200);
    expect(res.body.name.givenName).toBe('Edgar');
  });
});

describe('NUL characters and foreign content types get a clear 4xx, and start no workflow', () => {
  test.each([
    [
      'admin creation, a name',
      'POST',
      '/api/v1/profile/',
      '{"email":"n@example.test","firstName":"A\\u0000"}',
      'firstName',
    ],
    [
      'admin creation, an attribute value',
      'POST',
      '/api/v1/profile/',
      '{"email":"n@example.test","customAttributes":{"team":"x\\u0000"}}',
      'customAttributes.team',
    ],
    [
      'admin creation, an attribute key',
      'POST',
      '/api/v1/profile/',
      '{"email":"n@example.test","customAttributes":{"te\\u0000am":"x"}}',
      'customAttributes.te\\u0000am',
    ],
    [
      'registration, the password',
      'POST',
      '/api/auth/register',
      '{"email":"n@example.test","password":"pass\\u0000word"}',
      'password',
    ],
    ['SCIM user creation', 'POST', '/scim/v2/Users', '{"userName":"n\\u0000@example.test"}', 'userName'],
    ['SCIM group creation', 'POST', '/scim/v2/Groups', '{"displayName":"G\\u0000"}', 'displayName'],
    [
      'SCIM PATCH value',
      'PATCH',
      '/scim/v2/Users/USER',
      '{"Operations":[{"op":"replace","path":"name.givenName","value":"x\\u0000"}]}',
      'Operations[0].value',
    ],
    [
      'app registration',
      'POST',
      '/api/v1/provisioning/apps',
      '{"appId":"a","CallbackUrl":"https://a.example.test","ApiKey":"k\\u0000"}',
      'ApiKey',
    ],
  ])('%s: 400 naming the field', async (_label, method, path, body, field) => {
    const res = await send(method, path.replace('USER', userId), {
      body,
      auth: path === '/api/auth/register' ? null : undefined,
    });
    expect(res.status).toBe(400);
    expect(res.body.detail).toBe(`${field}: must not contain NUL characters`);
    if (path.startsWith('/scim/')) expect(res.body.scimType).toBe('invalidValue');
  });

  test.each([
    ['GET', '/api/v1/profile/%00'],
    ['DELETE', '/api/v1/profile/x%00y'],
    ['GET', '/scim/v2/Users/%00'],
    ['GET', '/scim/v2/Groups/%00'],
    ['GET', '/api/v1/provisioning/apps/%00'],
    ['DELETE', '/api/v1/scim/tokens/%00'],
    ['GET', '/scim/v2/Users?filter=userName%20eq%20%22a%00%22'],
  ])('%s %s: 400', async (method, path) => {
    const res = await send(method, path);
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/must not contain NUL characters/);
  });

  test.each([
    ['/api/v1/profile/', 'text/plain', 'application/json', 'application/problem+json'],
    ['/api/auth/register', 'application/x-www-form-urlencoded', 'application/json', 'application/problem+json'],
    ['/scim/v2/Users', 'application/xml', 'application/scim+json or application/json', 'application/scim+json'],
  ])('POST %s with %s: 415 naming what to send', async (path, type, expected, answerType) => {
    const res = await send('POST', path, {
      body: 'email=a@example.test',
      type,
      auth: path === '/api/auth/register' ? null : undefined,
    });
    expect(res.status).toBe(415);
    expect(res.type).toMatch(new RegExp(`^${answerType.replace('+', '\\+')}`));
    expect(res.body.detail).toContain(`the body must be ${expected}`);
  });

  test('none of the refused requests started a workflow', async () => {
    const connection = await Connection.connect({ address: process.env.TEST_TEMPORAL_ADDRESS! });
    try {
      // Signing-key rotation is started by the API itself, at start.
      const count = await new Client({ connection }).workflow.count(
        `TaskQueue = '${taskQueue}' AND WorkflowType != 'signingKeyRotation'`,
      );
      expect(count.count).toBe(0);
    } finally {
      await connection.close();
    }
  });
});

// Robustness issue, items 2-5: what the store cannot hold (a lone surrogate, a NUL, an absurd length or date) and what
// no parser should walk (deep nesting) is a 400 naming the field, never a 500 or a workflow that retries.
describe('values the store cannot hold and bodies no one should walk: 400 naming where', () => {
  const deep = (depth: number) => `${'['.repeat(depth)}1${']'.repeat(depth)}`;

  test.each([
    ['registration (public)', '/api/auth/register', null],
    ['SCIM without a token', '/scim/v2/Users', null],
    ['admin creation', '/api/v1/profile/', undefined],
  ])('JSON nested 6,000 deep on %s: 400, nested deeper than 32 levels', async (_label, path, auth) => {
    const res = await send('POST', path, { body: `{"email":${deep(6000)}}`, auth });
    expect(res.status).toBe(400);
    expect(res.body.detail).toBe(
      'email[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]: nested deeper than 32 levels',
    );
  });

  test.each([
    [
      'an admin attribute value',
      'POST',
      '/api/v1/profile/',
      '{"email":"s@example.test","customAttributes":{"team":"\\ud800"}}',
      'customAttributes.team',
    ],
    [
      'a SCIM e-mail type',
      'POST',
      '/scim/v2/Users',
      '{"userName":"s@example.test","emails":[{"value":"s@example.test","type":"\\udc00x"}]}',
      'emails[0].type',
    ],
    [
      'a SCIM enterprise attribute',
      'POST',
      '/scim/v2/Users',
      '{"userName":"s2@example.test","urn:ietf:params:scim:schemas:extension:enterprise:2.0:User":{"department":"R\\ud800D"}}',
      'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User.department',
    ],
    [
      'a client redirect URI',
      'PUT',
      '/api/v1/clients/surrogate',
      '{"AllowedGrantTypes":["authorization_code"],"RedirectUris":["https://a.example.test/\\ud800"]}',
      'RedirectUris[0]',
    ],
    [
      'a client scope',
      'PUT',
      '/api/v1/clients/surrogate',
      '{"AllowedScopes":["openid","\\ud800"]}',
      'AllowedScopes[1]',
    ],
  ])('a lone surrogate in %s: 400 naming the field', async (_label, method, path, body, field) => {
    const res = await send(method, path, { body });
    expect(res.status).toBe(400);
    expect(res.body.detail).toBe(
      `${field}: must be well-formed Unicode (a lone UTF-16 surrogate such as \\ud800 cannot be stored)`,
    );
  });

  test('a SCIM e-mail longer than an address can be: 400, not 500', async () => {
    const value = `${'a'.repeat(4000)}@example.test`;
    const res = await send('POST', '/scim/v2/Users', {
      body: JSON.stringify({ userName: 'long@example.test', emails: [{ value }] }),
    });
    expect(res.status).toBe(400);
    expect(res.body.scimType).toBe('invalidValue');
  });

  test('a client secret expiring at the end of JavaScript time: 400 naming the field', async () => {
    const res = await send('PUT', '/api/v1/clients/far-future', {
      body: JSON.stringify({
        AllowedGrantTypes: ['client_credentials'],
        AllowedScopes: ['openid'],
        ClientSecrets: [{ Value: 'far-future-secret-16', Expiration: -8640000000000000 }],
      }),
    });
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain('ClientSecrets.0.Expiration');
    expect(res.body.detail).toContain('between the years 1 and 9999');
  });
});

// Robustness issue, item 4: a NUL outside a JSON body reached PostgreSQL from the provider's endpoints.
describe('NUL in what the provider endpoints take: a protocol error, not a 500', () => {
  const form = (path: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
    fetch(`${url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
      body: new URLSearchParams(fields).toString(),
    });

  test.each([
    ['/connect/token, client_id', '/connect/token', { grant_type: 'client_credentials', client_id: 'a\0b' }],
    ['/connect/token, code', '/connect/token', { grant_type: 'authorization_code', client_id: 'nobody', code: 'c\0d' }],
    ['/connect/userinfo, access_token', '/connect/userinfo', { access_token: 't\0k' }],
    ['/connect/introspect, token', '/connect/introspect', { client_id: 'x\0', token: 't\0k' }],
    ['/connect/revocation, token', '/connect/revocation', { client_id: 'x\0', token: 't\0k' }],
  ])('%s: 4xx with an OAuth error', async (_label, path, fields) => {
    const res = await form(path, fields);
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(((await res.json()) as { error: string }).error).toMatch(/^invalid_/);
  });

  test('a bearer JWT whose header names a key id with NUL: refused, not a 500', async () => {
    const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const token = `${part({ alg: 'RS256', typ: 'at+jwt', kid: 'k\u0000' })}.${part({ sub: 'x' })}.c2ln`;
    const res = await send('GET', '/api/v1/clients', { auth: `Bearer ${token}` });
    expect(res.status).toBe(401);
  });
});

// Robustness issue, item 8: settings that could never work are refused when written.
describe('settings that can never work are refused with 400 naming the field and the rule', () => {
  test.each([
    ['an ApiKey with CR/LF', { ApiKey: 'key\r\nX-Injected: 1' }, 'ApiKey', 'printable ASCII'],
    ['an ApiKey of 90 kB', { ApiKey: 'k'.repeat(90_000) }, 'ApiKey', 'at most 4096'],
  ])('an app with %s', async (_label, extra, field, rule) => {
    const res = await send('POST', '/api/v1/provisioning/apps', {
      body: JSON.stringify({
        appId: `bad-${randomUUID().slice(0, 8)}`,
        CallbackUrl: 'https://app.example.test',
        ...extra,
      }),
    });
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain(field);
    expect(res.body.detail).toContain(rule);
  });

  test.each([
    ['javascript:', 'javascript:alert(1)', 'the scheme javascript: is not allowed'],
    ['data:', 'data:text/html,<script>alert(1)</script>', 'the scheme data: is not allowed'],
    ['a fragment', 'https://app.example.test/cb#x', 'must not carry a fragment'],
  ])('a client redirect URI with %s', async (_label, uri, rule) => {
    const res = await send('PUT', '/api/v1/clients/bad-redirect', {
      body: JSON.stringify({
        AllowedGrantTypes: ['authorization_code'],
        RedirectUris: [uri],
        AllowedScopes: ['openid'],
      }),
    });
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain('RedirectUris');
    expect(res.body.detail).toContain(rule);
  });

  test('a client with RedirectUris but no grant that uses them', async () => {
    const res = await send('PUT', '/api/v1/clients/no-grant', {
      body: JSON.stringify({ RedirectUris: ['https://app.example.test/cb'], AllowedScopes: ['openid'] }),
    });
    expect(res.status).toBe(400);
    expect(res.body.detail).toContain('RedirectUris: redirect URIs are used only by the authorization_code grant');
  });
});

describe('URLs come from Api:PublicUrl, never from the Host header', () => {
  // Robustness issue, item 6.
  test('a forged Host header changes no endpoint of the discovery document, nor the sign-out form', async () => {
    const discovery = await send('GET', '/.well-known/openid-configuration', { host: 'evil.example', auth: null });
    expect(discovery.status).toBe(200);
    expect(discovery.body.issuer).toBe(PUBLIC_URL);
    const urls = Object.entries(discovery.body as Record<string, unknown>).filter(
      ([key, value]) => typeof value === 'string' && (key.endsWith('_endpoint') || key === 'jwks_uri'),
    );
    expect(urls.length).toBeGreaterThan(5);
    for (const [key, value] of urls) expect([key, value]).toEqual([key, expect.stringMatching(`^${PUBLIC_URL}/`)]);
    expect(discovery.body.jwks_uri).toBe(`${PUBLIC_URL}/.well-known/openid-configuration/jwks`);
    const signOut = await send('GET', '/connect/endsession', { host: 'evil.example', auth: null });
    expect(signOut.status).toBe(200);
    expect(String(signOut.body)).toContain(`action="${PUBLIC_URL}/connect/endsession/confirm"`);
    expect(String(signOut.body)).not.toContain('evil.example');
  });

  test('a forged Host header does not reach meta.location', async () => {
    const res = await send('GET', `/scim/v2/Users/${userId}`, { host: 'evil.example' });
    expect(res.status).toBe(200);
    expect(res.body.meta.location).toBe(`${PUBLIC_URL}/scim/v2/Users/${userId}`);
    const config = await send('GET', '/scim/v2/ServiceProviderConfig', { host: 'evil.example' });
    expect(config.body.meta.location).toBe(`${PUBLIC_URL}/scim/v2/ServiceProviderConfig`);
  });

  test('a SCIM body too large is answered in the SCIM error schema', async () => {
    const res = await send('POST', '/scim/v2/Users', {
      body: JSON.stringify({ userName: 'big@example.test', padding: 'x'.repeat(200_000) }),
    });
    expect(res.status).toBe(413);
    expect(res.body).toMatchObject({ schemas: ['urn:ietf:params:scim:api:messages:2.0:Error'], status: '413' });
  });
});

describe('start-up never claims a port it does not hold', () => {
  // Robustness issue, item 10: the port was bound before its handler was attached, and a request in between was
  // accepted and never answered.
  test('from the moment its port is open, the API answers every request (503 while it starts)', async () => {
    const port = await freePort();
    const starting = spawnService('api/server.ts', serviceEnv({ PORT: String(port) }));
    const statuses = new Set<number>();
    try {
      for (const deadline = Date.now() + 60_000; Date.now() < deadline && !statuses.has(200);) {
        const answer = await fetch(`http://127.0.0.1:${port}/healthz`, { signal: AbortSignal.timeout(5_000) }).then(
          (res) => res.status,
          (error: Error) => (error.name === 'TimeoutError' ? -1 : 0),
        );
        if (answer === -1) throw new Error('a request to the open port got no answer within 5 s');
        if (answer !== 0) statuses.add(answer);
      }
    } finally {
      await starting.stop();
    }
    expect(statuses.has(200)).toBe(true);
    expect([...statuses].every((status) => status === 200 || status === 503)).toBe(true);
  }, 90_000);

  test('the API on a taken port stops and names the port', async () => {
    const port = new URL(url).port;
    const second = spawnService('api/server.ts', serviceEnv({ PORT: port }));
    expect(await second.exited).toBe(1);
    expect(second.output()).toContain(
      `api: port ${port} on 127.0.0.1 is already in use by another process; stop that process or set PORT (or Api:Port) to a free port`,
    );
    expect(second.output()).not.toMatch(/listening/);
  });

  test('the example downstream app on a taken port stops and names the port', async () => {
    const port = new URL(url).port;
    const app = spawnService('examples/downstream-app/server.ts', { API_KEY: 'k', PORT: port });
    expect(await app.exited).toBe(1);
    expect(app.output()).toContain(`downstream-app: port ${port} on 127.0.0.1 is already in use`);
    expect(app.output()).not.toMatch(/serving/);
  });

  test('with an external database and no data-protection key, start-up stops naming the setting', async () => {
    const env = serviceEnv();
    delete (env as Record<string, string>).DataProtection__Keys__0__Id;
    delete (env as Record<string, string>).DataProtection__Keys__0__Key;
    const keyless = spawnService('api/server.ts', env);
    expect(await keyless.exited).toBe(1);
    expect(keyless.output()).toContain(
      'DataProtection:Keys (or DataProtection:Key) is required with an external database',
    );
  });

  test('with TEMPORAL_ADDRESS and no payload key, the API and the worker stop naming the setting', async () => {
    const env: Record<string, string> = serviceEnv();
    delete env.Temporal__PayloadKeys__0__Id;
    delete env.Temporal__PayloadKeys__0__Key;
    for (const entry of ['api/server.ts', 'workers/worker.ts']) {
      const keyless = spawnService(entry, env);
      expect(await keyless.exited).toBe(1);
      expect(keyless.output()).toContain('Temporal:PayloadKeys is required with Temporal:Address');
    }
  });
});
