import { useHarness, UNLIMITED_SIGN_IN } from '../support/harness';
import { CookieJar, postForm } from '../support/sign-in-flow';

// Issue 37 item 8. A database of its own: the user-code budgets count every entry from this address in the store.
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
const TOO_MANY = 'Too many codes entered';

beforeAll(async () => {
  const client = await h.admin('PUT', '/api/v1/clients/kitchen-tv', {
    ClientName: 'Kitchen TV',
    RequireClientSecret: false,
    AllowedGrantTypes: [DEVICE_GRANT],
    AllowedScopes: ['openid', 'profile', 'email'],
  });
  expect(client.status).toBe(201);
});

/** What a TV asks for at the device authorization endpoint. */
async function deviceCode(scope: string): Promise<{ user_code: string; device_code: string }> {
  const answer = await postForm(`${h.api.url}/connect/deviceauthorization`, { client_id: 'kitchen-tv', scope });
  expect(answer.status).toBe(200);
  return (await answer.json()) as { user_code: string; device_code: string };
}

/** A person's browser session at /device, seen from `address` (the trusted proxy forwards it). */
function session(address = '203.0.113.1') {
  const jar = new CookieJar();
  const url = `${h.api.url}/device`;
  let xsrf = '';
  return {
    jar,
    async open(): Promise<void> {
      const page = await fetch(url, { headers: { cookie: jar.header(url), 'x-forwarded-for': address } });
      jar.take(page, url);
      xsrf = /name="xsrf" value="([^"]*)"/.exec(await page.text())![1];
    },
    /** Enters a code, at `/device` or a spelling of it the provider also serves (`/device/`). */
    async enter(userCode: string, from = address, path = '/device'): Promise<{ status: number; text: string }> {
      const answer = await postForm(
        `${h.api.url}${path}`,
        { xsrf, user_code: userCode },
        {
          cookie: jar.header(url),
          'x-forwarded-for': from,
        },
      );
      jar.take(answer, url);
      return { status: answer.status, text: await answer.text() };
    },
  };
}

/** `count` wrong codes, `parallel` at a time. */
async function guesses(
  count: number,
  parallel: number,
  guess: (i: number) => Promise<{ status: number; text: string }>,
) {
  const answers: { status: number; text: string }[] = [];
  for (let i = 0; i < count; i += parallel)
    answers.push(...(await Promise.all(Array.from({ length: Math.min(parallel, count - i) }, (_, j) => guess(i + j)))));
  return answers;
}

const wrongCode = (i: number) => `BCDF-${'GHJKLMNPQRSTVWXZ'[i % 16]}${'GHJKLMNPQRSTVWXZ'[(i >> 4) % 16]}KL`;

test('60 parallel guesses in one session look up at most the session budget; then even the right code waits', async () => {
  const asked = await deviceCode('openid');
  const person = session('203.0.113.10');
  await person.open();
  const answers = await guesses(60, 10, (i) => person.enter(wrongCode(i)));
  expect(answers.filter((a) => a.text.includes(NOT_RIGHT))).toHaveLength(5);
  const refused = answers.filter((a) => a.status === 429);
  expect(refused).toHaveLength(55);
  expect(refused[0].text).toContain(TOO_MANY);
  const right = await person.enter(asked.user_code);
  expect(right.status).toBe(429);
});

test('a session does not buy more guesses by changing its address', async () => {
  const person = session();
  await person.open();
  const answers = await guesses(12, 4, (i) => person.enter(wrongCode(i), `198.51.100.${i + 1}`));
  expect(answers.map((a) => a.status).filter((s) => s === 429)).toHaveLength(7);
});

test('fresh sessions from one address share the address budget', async () => {
  const answers = await guesses(14, 4, async (i) => {
    const person = session('203.0.113.20');
    await person.open();
    return person.enter(wrongCode(i));
  });
  expect(answers.filter((a) => a.text.includes(NOT_RIGHT))).toHaveLength(10);
  expect(answers.filter((a) => a.status === 429)).toHaveLength(4);
});

test('the confirmation names the client and each scope being granted by its display name', async () => {
  const asked = await deviceCode('openid profile email');
  const person = session('203.0.113.30');
  await person.open();
  const confirm = await person.enter(asked.user_code);
  expect(confirm.status).toBe(200);
  expect(confirm.text).toContain('Kitchen TV');
  for (const shown of ['Your user identifier', 'User profile', 'Your email address'])
    expect(confirm.text).toContain(shown);
});

// The pentest after item 8: oidc-provider also serves the code entry at `/device/` (it drops a trailing slash and folds
// case), where the budget, matched on `/device` as written, did not apply: guesses there were all looked up.
test('a code posted to /device/ spends the same budget as one posted to /device; other spellings are not served', async () => {
  const { user_code } = await deviceCode('openid');
  const person = session('203.0.113.77');
  await person.open();
  for (let i = 0; i < 5; i++) expect((await person.enter(wrongCode(i))).text).toContain(NOT_RIGHT);
  expect((await person.enter(wrongCode(5))).status).toBe(429);
  expect((await person.enter(wrongCode(6), '203.0.113.77', '/device/')).status).toBe(429);
  // Spellings in another case are no sign-in path here: refused before the provider, never looked up.
  for (const path of ['/DEVICE', '/Device/']) {
    const answer = await person.enter(wrongCode(7), '203.0.113.77', path);
    expect([415, 429]).toContain(answer.status);
    expect(answer.text).not.toContain(NOT_RIGHT);
  }
  const right = await person.enter(user_code, '203.0.113.77', '/device/');
  expect(right.status).toBe(429);
  expect(right.text).not.toContain('Kitchen TV');
});

test('POST /device without a session answers a page saying to start again, not a 500', async () => {
  const answer = await postForm(
    `${h.api.url}/device`,
    { xsrf: 'none', user_code: 'BCDF-GHJK' },
    {
      'x-forwarded-for': '203.0.113.40',
    },
  );
  expect(answer.status).toBe(400);
  expect(answer.headers.get('content-type')).toMatch(/text\/html/);
  expect(await answer.text()).toContain('Open the address your device shows again');
});
