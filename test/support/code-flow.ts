import * as oidc from 'openid-client';
import { authorizationRequest } from './relying-party';
import { browser, textOf, type Browser, type Visit } from './sign-in-flow';

/** An authorization begun in a person's browser: the first page it showed, and what the code exchange needs. */
export interface Started {
  page: Browser;
  first: Visit | URL;
  verifier: string;
  state: string;
  /** The interaction's id, from the first page's address (empty when the browser went straight back). */
  uid: string;
}

/**
 * A relying party's authorization-code flow through the sign-in pages, with openid-client building the request (PKCE
 * and state) and redeeming the code: `start` opens /connect/authorize in a fresh browser, `signIn` fills the e-mail
 * and password forms, `tokens` exchanges the code the browser came back with.
 */
export function codeFlow(callback: string) {
  return {
    start: async (rp: oidc.Configuration, scope: string, extra: Record<string, string> = {}, stopAt = callback) => {
      const state = oidc.randomState();
      const { url, verifier } = await authorizationRequest(rp, { redirect_uri: callback, scope, state });
      const withExtra = new URL(url);
      for (const [key, value] of Object.entries(extra)) withExtra.searchParams.set(key, value);
      const page = browser(stopAt);
      const first = await page.open(withExtra.href);
      const uid = first instanceof URL ? '' : new URL(first.url).pathname.split('/')[2];
      return { page, first, verifier, state, uid } satisfies Started;
    },
    /** E-mail, then password; what came after the password form. */
    signIn: async (started: Pick<Started, 'page'>, email: string, password: string) => {
      await started.page.submit('/email', { email });
      return started.page.submit('/password', { password });
    },
    tokens: async (rp: oidc.Configuration, started: Started, answer: Visit | URL) => {
      if (!(answer instanceof URL)) throw new Error(`expected the redirect to the client, got: ${textOf(answer)}`);
      return oidc.authorizationCodeGrant(rp, answer, {
        pkceCodeVerifier: started.verifier,
        expectedState: started.state,
      });
    },
  };
}
