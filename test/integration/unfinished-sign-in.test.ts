import * as oidc from 'openid-client';
import { accountPages } from '../support/account-pages';
import { createUserWith, useHarness, UNLIMITED_SIGN_IN } from '../support/harness';
import { authorizationRequest, confidentialClient, relyingParty } from '../support/relying-party';
import { browser, textOf, type Visit } from '../support/sign-in-flow';

// Pentest after issue 37 ("password change ending sessions"): a sign-in whose password step has finished but
// whose browser has not yet come back to /connect/authorize/{uid} is an Interaction payload holding
// `result.login.accountId`. endSignInsIn (platform/store/oidc-payloads.ts) deletes the user's Session, Grant, tokens
// and codes, not those interactions, and nothing compares the login's time with users.sessions_revoked_at: whoever
// knew the old password (or held the browser) and left such a sign-in unfinished resumes it after the password
// change, "sign out everywhere", a reset or an admin's DELETE …/sessions, and gets a new 14-day session, a code,
// an access token and a refresh token.
const h = useHarness({ apps: {}, config: { Oidc: { ReloadSeconds: 0 }, Auth: UNLIMITED_SIGN_IN } });
const CALLBACK = 'https://app.example.com/callback';
const PASSWORD = 'correct horse battery 9';
const NEW_PASSWORD = 'another passphrase 1';
const client = { id: 'staged-web', secret: 'staged-web-secret-16', callback: CALLBACK };
const { signIn, account } = accountPages(h, client, PASSWORD);

beforeAll(async () => {
  const answer = await h.admin(
    'PUT',
    `/api/v1/clients/${client.id}`,
    confidentialClient(CALLBACK, ['openid'], client.secret),
  );
  expect(answer.status).toBe(201);
});

test('a sign-in left unfinished before a password change cannot be resumed after it', async () => {
  const user = await createUserWith(h, 'staged', PASSWORD);

  // The attacker, who knows the password for now, signs in and stops before the provider's resume.
  const rp = await relyingParty(h.api.publicUrl, client.id, client.secret);
  const { url, verifier } = await authorizationRequest(rp, { redirect_uri: CALLBACK, scope: 'openid offline_access' });
  const attacker = browser(`${h.api.publicUrl}/connect/authorize/`);
  await attacker.open(url);
  await attacker.submit('/email', { email: user.email });
  const resume = await attacker.submit('/password', { password: PASSWORD });
  expect(resume).toBeInstanceOf(URL);

  // The owner changes the password on /account: every other sign-in must end.
  const owner = await signIn(user.email);
  const page = await account(owner.page);
  const changed = (await owner.page.submit('/account/password', {
    current: PASSWORD,
    password: NEW_PASSWORD,
    confirm: NEW_PASSWORD,
  })) as Visit;
  expect(changed.status).toBe(200);
  expect(page.status).toBe(200);

  // The attacker resumes the sign-in made before the change: no code, no session.
  const resumed = await browser(CALLBACK, attacker.jar).open((resume as URL).href);
  let tokens: unknown;
  if (resumed instanceof URL && resumed.searchParams.has('code'))
    tokens = await oidc.authorizationCodeGrant(rp, resumed, { pkceCodeVerifier: verifier }).catch(() => undefined);
  expect(tokens).toBeUndefined();
  const accountPage = await account(browser(CALLBACK, attacker.jar));
  // No session: the account page starts its own sign-in instead of showing the account.
  expect(textOf(accountPage)).toMatch(/to continue to .* account/);
});
