import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { freePort } from '../../dev/ports';
import { serviceProcessEnv, stopAfterAll, uniqueEmail, useHarness } from '../support/harness';
import { createScratchStore } from '../support/scratch-store';
import { spawnService, waitForOutput, type ServiceProcess } from '../support/service-process';
import { browser, textOf, type Visit } from '../support/sign-in-flow';
import { publicClient } from '../support/relying-party';
import { countSignInAttempt } from '../../sign-in/store/sign-in-users';

// A database of its own: the budget counts every sign-in from this address in the store, and the other test files
// sign in from the same address.
const h = useHarness({
  apps: {},
  ownDatabase: true,
  config: { Auth: { SignInRateLimit: { PermitLimit: 3, WindowSeconds: 60 } } },
});
const CALLBACK = 'https://limited.example.com/callback';
const PUBLIC_CLIENT = publicClient(CALLBACK);

/** An authorization request of a public client with PKCE, as its browser opens it. */
function authorizeUrl(base: string, clientId: string): string {
  const authorize = new URL('/connect/authorize', base);
  authorize.search = new URLSearchParams({
    client_id: clientId,
    response_type: 'code',
    redirect_uri: CALLBACK,
    scope: 'openid',
    code_challenge: createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url'),
    code_challenge_method: 'S256',
  }).toString();
  return authorize.href;
}

test('password posts from one address past Auth:SignInRateLimit answer 429 and say when to come back', async () => {
  const email = uniqueEmail('limited');
  expect((await h.request('POST', '/api/auth/register', { email, password: 'a long passphrase 7' })).status).toBe(201);
  expect((await h.admin('PUT', '/api/v1/clients/limited', PUBLIC_CLIENT)).status).toBe(201);
  const statuses: number[] = [];
  let last: Visit | URL | undefined;
  for (let i = 0; i < 4; i++) {
    const person = browser(CALLBACK);
    await person.open(authorizeUrl(h.api.url, 'limited'));
    await person.submit('/email', { email });
    last = await person.submit('/password', { password: 'wrong passphrase' });
    statuses.push((last as Visit).status);
  }
  expect(statuses).toEqual([200, 200, 200, 429]);
  expect(textOf(last!)).toContain('Too many sign-in attempts from this network; wait 60 seconds and try again.');
});

// Pentest (sign-in security, item 7): behind an https public URL, X-Forwarded-For was believed from every loopback and
// private address, and rotating it bypassed both limits. Now only Api:TrustedProxies (default none) are believed.
describe('behind an https public URL with no trusted proxy', () => {
  const proxied = useHarness({
    apps: {},
    ownDatabase: true,
    config: {
      Api: { PublicUrl: 'https://id.example.test' },
      Auth: {
        SignInRateLimit: { PermitLimit: 3, WindowSeconds: 60 },
        RegistrationRateLimit: { PermitLimit: 3, WindowSeconds: 60 },
      },
    },
  });
  const forwardedFor = (i: number) => ({ 'x-forwarded-for': `198.51.100.${i + 1}` });

  test('a rotating X-Forwarded-For does not buy more registrations', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++)
      statuses.push(
        (
          await proxied.request(
            'POST',
            '/api/auth/register',
            { email: uniqueEmail(`rotating${i}`), password: 'a long passphrase 7' },
            forwardedFor(i),
          )
        ).status,
      );
    expect(statuses).toEqual([201, 201, 201, 429]);
  });

  test('a rotating X-Forwarded-For does not buy more password guesses', async () => {
    const email = uniqueEmail('rotating-guesses');
    const client = await proxied.admin('PUT', '/api/v1/clients/rotating', PUBLIC_CLIENT);
    expect(client.status).toBe(201);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const person = browser(CALLBACK);
      const emailPage = (await person.open(authorizeUrl(proxied.api.url, 'rotating'))) as Visit;
      const uid = new URL(emailPage.url).pathname.split('/')[2];
      const answer = await fetch(`${proxied.api.url}/interaction/${uid}/password`, {
        method: 'POST',
        headers: {
          ...forwardedFor(i),
          cookie: person.jar.header(emailPage.url),
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ email, password: 'wrong passphrase' }).toString(),
      });
      statuses.push(answer.status);
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
  });
});

// Issue 37 item 9: the sign-in budget counted each attempt in one statement, from a snapshot without the attempts
// running beside it, so a burst of parallel guesses from one address all saw the same count and went through.
describe('a burst of parallel password guesses from one address', () => {
  const burst = useHarness({
    apps: {},
    ownDatabase: true,
    config: { Auth: { SignInRateLimit: { PermitLimit: 3, WindowSeconds: 60 } } },
  });

  test('spends the budget once: no more than Auth:SignInRateLimit of them are checked', async () => {
    const email = uniqueEmail('burst');
    expect((await burst.admin('PUT', '/api/v1/clients/burst', PUBLIC_CLIENT)).status).toBe(201);
    for (let round = 0; round < 2; round++) {
      const pages: Array<{ uid: string; cookie: string }> = [];
      for (let i = 0; i < 12; i++) {
        const person = browser(CALLBACK);
        const emailPage = (await person.open(authorizeUrl(burst.api.url, 'burst'))) as Visit;
        pages.push({ uid: new URL(emailPage.url).pathname.split('/')[2], cookie: person.jar.header(emailPage.url) });
      }
      const statuses = await Promise.all(
        pages.map(async ({ uid, cookie }) => {
          const answer = await fetch(`${burst.api.url}/interaction/${uid}/password`, {
            method: 'POST',
            headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({ email, password: 'wrong passphrase' }).toString(),
          });
          return answer.status;
        }),
      );
      // The first round spends the whole budget; the second finds it spent.
      expect(statuses.filter((s) => s !== 429).length).toBeLessThanOrEqual(round === 0 ? 3 : 0);
    }
  });

  test('parallel attempts each count the others: every count from 1 to N once', async () => {
    for (let round = 0; round < 3; round++) {
      const address = `burst-${round}-${randomUUID()}`;
      const counts = await Promise.all(
        Array.from({ length: 20 }, () => countSignInAttempt(burst.context.db, address, 60)),
      );
      expect(counts.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    }
  });
});

// Issue 37 item 9: the registration budget was kept in each process's memory, so two API instances behind one URL
// allowed twice Auth:RegistrationRateLimit. Two API processes of this test's own share one store here.
describe('two API processes on one store', () => {
  let store: Awaited<ReturnType<typeof createScratchStore>> | undefined;
  const apis: { url: string; process: ServiceProcess }[] = [];

  beforeAll(async () => {
    store = await createScratchStore('ips_two_apis');
    const queue = `test-unserved-${randomUUID()}`;
    for (let i = 0; i < 2; i++) {
      const port = await freePort();
      const process = spawnService('api/server.ts', {
        ...serviceProcessEnv(queue),
        DATABASE_URL: store.url,
        PORT: String(port),
        Auth__RegistrationRateLimit__PermitLimit: '3',
        Auth__RegistrationRateLimit__WindowSeconds: '60',
      });
      apis.push({ url: `http://127.0.0.1:${port}`, process });
    }
    await Promise.all(apis.map((api) => waitForOutput(api.process, /api: listening on/)));
  }, 90_000);
  stopAfterAll(() => [...apis.map((api) => api.process), store && { stop: () => store!.drop() }]);

  test('spend one registration budget: the fourth registration from one address is refused by either', async () => {
    const statuses: number[] = [];
    // No worker serves these processes: a password the policy refuses (400) still spends the budget, as any request.
    for (let i = 0; i < 6; i++) {
      const answer = await fetch(`${apis[i % 2].url}/api/auth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: uniqueEmail(`two-apis${i}`), password: 'short' }),
      });
      statuses.push(answer.status);
      if (answer.status === 429) expect(answer.headers.get('retry-after')).toBe('60');
    }
    expect(statuses).toEqual([400, 400, 400, 429, 429, 429]);
  });
});
