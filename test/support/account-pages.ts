import * as oidc from 'openid-client';
import type { Harness } from './harness';
import { authorizationRequest, relyingParty } from './relying-party';
import { browser, type Browser, type Visit } from './sign-in-flow';
import { totp } from './totp';

/** The client a file's account tests sign in through: its id, secret and callback. */
export interface AccountClient {
  id: string;
  secret: string;
  callback: string;
}

/**
 * A person using their account pages: `signIn` through openid-client's authorization request (the browser keeps the
 * session cookie; a code when asked), `account` opens `/account{path}`, `enrol` turns two-step verification on at
 * `/account/mfa`, `formToken` reads the anti-forgery token a page's forms carry.
 */
export function accountPages(h: Pick<Harness, 'api'>, client: AccountClient, password: string) {
  async function signIn(email: string, pass = password, code?: string, page: Browser = browser(client.callback)) {
    const rp = await relyingParty(h.api.publicUrl, client.id, client.secret);
    const scope = 'openid offline_access';
    const { url, verifier } = await authorizationRequest(rp, { redirect_uri: client.callback, scope });
    await page.open(url);
    await page.submit('/email', { email });
    let answer = await page.submit('/password', { password: pass });
    if (code !== undefined && !(answer instanceof URL)) answer = await page.submit('/code', { code });
    if (!(answer instanceof URL)) return { page, answer, tokens: undefined, rp };
    return { page, answer, tokens: await oidc.authorizationCodeGrant(rp, answer, { pkceCodeVerifier: verifier }), rp };
  }

  const account = (page: Browser, path = '') => page.open(`${h.api.publicUrl}/account${path}`) as Promise<Visit>;

  /** Enrols an authenticator at /account/mfa: the key shown, and the recovery codes shown once. */
  async function enrol(page: Browser) {
    const enrolment = await account(page, '/mfa');
    const key = /<p class="key">([A-Z2-7 ]+)<\/p>/.exec(enrolment.html)![1].replace(/ /g, '');
    const done = (await page.submit('/account/mfa', { code: totp(key) })) as Visit;
    const codes = [...done.html.matchAll(/<li>([2-9A-Z]{5}-[2-9A-Z]{5})<\/li>/g)].map((m) => m[1]);
    return { key, done, codes };
  }

  const formToken = (visit: Visit) => /name="__RequestVerificationToken" value="([^"]+)"/.exec(visit.html)?.[1];

  return { signIn, account, enrol, formToken };
}
