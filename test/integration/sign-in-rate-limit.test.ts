import { createHash, randomBytes } from 'node:crypto';
import { uniqueEmail, useHarness } from '../support/harness';
import { browser, textOf, type Visit } from '../support/sign-in-flow';

// A database of its own: the budget counts every sign-in from this address in the store, and the other test files
// sign in from the same address.
const h = useHarness({
  apps: {},
  ownDatabase: true,
  config: { Auth: { SignInRateLimit: { PermitLimit: 3, WindowSeconds: 60 } } },
});
const CALLBACK = 'https://limited.example.com/callback';

test('password posts from one address past Auth:SignInRateLimit answer 429 and say when to come back', async () => {
  const email = uniqueEmail('limited');
  expect((await h.request('POST', '/api/auth/register', { email, password: 'a long passphrase 7' })).status).toBe(201);
  expect(
    (
      await h.admin('PUT', '/api/v1/clients/limited', {
        RequireClientSecret: false,
        AllowedGrantTypes: ['authorization_code'],
        RedirectUris: [CALLBACK],
        AllowedScopes: ['openid'],
      })
    ).status,
  ).toBe(201);
  const statuses: number[] = [];
  let last: Visit | URL | undefined;
  for (let i = 0; i < 4; i++) {
    const person = browser(CALLBACK);
    const authorize = new URL('/connect/authorize', h.api.url);
    authorize.search = new URLSearchParams({
      client_id: 'limited',
      response_type: 'code',
      redirect_uri: CALLBACK,
      scope: 'openid',
      code_challenge: createHash('sha256').update(randomBytes(32).toString('base64url')).digest('base64url'),
      code_challenge_method: 'S256',
    }).toString();
    await person.open(authorize.href);
    await person.submit('/email', { email });
    last = await person.submit('/password', { password: 'wrong passphrase' });
    statuses.push((last as Visit).status);
  }
  expect(statuses).toEqual([200, 200, 200, 429]);
  expect(textOf(last!)).toContain('Too many sign-in attempts from this network; wait 60 seconds and try again.');
});
