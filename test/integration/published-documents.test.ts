import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { eventually, UNLIMITED_SIGN_IN, useHarness } from '../support/harness';
import { storeSigningKey, type SigningJwk } from '../../platform/store/signing-keys';

// Issue 42: discovery and the JWKS are answered from the copy a provider build made, with an ETag and
// Discovery:ResponseCacheInterval's Cache-Control as Duende IdentityServer sends it; a new key set is a new copy.
const h = useHarness({
  apps: {},
  ownDatabase: true,
  config: {
    Oidc: { ReloadSeconds: 0 },
    Auth: { ...UNLIMITED_SIGN_IN },
    KeyManagement: { KeyCacheDuration: '00:00:01' },
    Discovery: { ResponseCacheInterval: 3600 },
  },
});

const DISCOVERY = '/.well-known/openid-configuration';
const JWKS = '/.well-known/openid-configuration/jwks';
const get = (path: string, headers: Record<string, string> = {}, method = 'GET') =>
  fetch(`${h.api.url}${path}`, { method, headers });

describe.each([DISCOVERY, JWKS])('%s', (path) => {
  test('carries an ETag, max-age of Discovery:ResponseCacheInterval, open CORS and the sign-in headers', async () => {
    const answer = await get(path, { origin: 'https://spa.example' });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('etag')).toMatch(/^"[\w-]+"$/);
    expect(answer.headers.get('cache-control')).toBe('max-age=3600');
    expect(answer.headers.get('vary')).toContain('Origin');
    expect(answer.headers.get('access-control-allow-origin')).toBe('https://spa.example');
    expect(answer.headers.get('x-frame-options')).toBe('DENY');
    expect(answer.headers.get('x-content-type-options')).toBe('nosniff');
    expect(answer.headers.get('x-request-id')).toBeTruthy();
    const body = (await answer.json()) as Record<string, unknown>;
    if (path === DISCOVERY)
      expect(body).toMatchObject({ issuer: h.api.publicUrl, jwks_uri: `${h.api.publicUrl}${JWKS}` });
    else expect((body.keys as unknown[]).length).toBeGreaterThan(0);
  });

  test('If-None-Match with the ETag is answered 304 without a body; HEAD without one; a stale tag gets the body', async () => {
    const etag = (await get(path)).headers.get('etag')!;
    const revalidated = await get(path, { 'if-none-match': `W/${etag}, "other"` });
    expect(revalidated.status).toBe(304);
    expect(revalidated.headers.get('etag')).toBe(etag);
    expect(await revalidated.text()).toBe('');
    const head = await get(path, {}, 'HEAD');
    expect([head.status, head.headers.get('etag'), await head.text()]).toEqual([200, etag, '']);
    expect((await get(path, { 'if-none-match': '"stale"' })).status).toBe(200);
  });

  test('a CORS preflight is still answered by the provider', async () => {
    const preflight = await get(
      path,
      { origin: 'https://spa.example', 'access-control-request-method': 'GET' },
      'OPTIONS',
    );
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://spa.example');
  });
});

test('a key added to the store is a new JWKS copy: new ETag, the key published, the old tag no longer current', async () => {
  const before = await get(JWKS);
  const etag = before.headers.get('etag')!;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const key: SigningJwk = {
    ...privateKey.export({ format: 'jwk' }),
    kid: `added-${randomUUID()}`,
    alg: 'RS256',
    use: 'sig',
  };
  await storeSigningKey(h.context.db, h.context.dataProtection!, key, {
    origin: 'migrated',
    createdAt: new Date(Date.now() - 24 * 3600_000),
  });
  const after = await eventually(async () => {
    const answer = await get(JWKS, { 'if-none-match': etag });
    expect(answer.status).toBe(200);
    return answer;
  }, 10_000);
  expect(after.headers.get('etag')).not.toBe(etag);
  expect(((await after.json()) as { keys: { kid: string }[] }).keys.map((k) => k.kid)).toContain(key.kid);
});
