import { useHarness, UNLIMITED_SIGN_IN } from '../support/harness';
import { CookieJar, postForm } from '../support/sign-in-flow';

// Pentest after issue 37 (item 8): the user-code budget (device-flow.ts userCodeBudget) is matched on the exact
// path `/device`, but oidc-provider's router also serves the code-verification POST at `/device/` (it strips one
// trailing slash, and folds case), and the sign-in router forwards `/device/` to the provider. Every guess posted to
// `/device/` is looked up without spending either budget.
const h = useHarness({
  apps: {},
  ownDatabase: true,
  config: {
    Oidc: { ReloadSeconds: 0 },
    Api: { TrustedProxies: ['127.0.0.1'] },
    Auth: { ...UNLIMITED_SIGN_IN, UserCodeRateLimit: { PermitLimit: 5, AddressPermitLimit: 10, WindowSeconds: 300 } },
  },
});
const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
const NOT_RIGHT = 'That code is not right';

beforeAll(async () => {
  const client = await h.admin('PUT', '/api/v1/clients/hall-tv', {
    ClientName: 'Hall TV',
    RequireClientSecret: false,
    AllowedGrantTypes: [DEVICE_GRANT],
    AllowedScopes: ['openid', 'profile'],
  });
  expect(client.status).toBe(201);
});

test('a user code posted to /device/ (trailing slash) spends the same budget as one posted to /device', async () => {
  const asked = await postForm(`${h.api.url}/connect/deviceauthorization`, { client_id: 'hall-tv', scope: 'openid' });
  const { user_code } = (await asked.json()) as { user_code: string };
  const jar = new CookieJar();
  const page = await fetch(`${h.api.url}/device`, {
    headers: { cookie: jar.header(`${h.api.url}/device`), 'x-forwarded-for': '203.0.113.77' },
  });
  jar.take(page, `${h.api.url}/device`);
  let xsrf = /name="xsrf" value="([^"]*)"/.exec(await page.text())![1];
  const enter = async (path: string, code: string) => {
    const url = `${h.api.url}${path}`;
    const answer = await postForm(
      url,
      { xsrf, user_code: code },
      { cookie: jar.header(url), 'x-forwarded-for': '203.0.113.77' },
    );
    jar.take(answer, url);
    const text = await answer.text();
    xsrf = /name="xsrf" value="([^"]*)"/.exec(text)?.[1] ?? xsrf;
    return { status: answer.status, text };
  };
  // The session's budget (5) is spent at /device.
  for (let i = 0; i < 5; i += 1) expect((await enter('/device', 'BCDF-GHJK')).text).toContain(NOT_RIGHT);
  expect((await enter('/device', 'BCDF-GHJK')).status).toBe(429);
  // The same session keeps guessing at /device/: each guess must be refused unread, as at /device.
  const more: number[] = [];
  for (let i = 0; i < 10; i += 1) more.push((await enter('/device/', 'BCDF-GHJK')).status);
  expect(more.every((status) => status === 429)).toBe(true);
  // And the right code must not be taken past the budget by either spelling.
  const right = await enter('/device/', user_code);
  expect(right.status).toBe(429);
  expect(right.text).not.toContain('Hall TV');
});
