import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { Router, type Request, type RequestHandler, type Response } from 'express';
import type Provider from 'oidc-provider';
import { escapeHtml, page, sendPage } from '../../platform/http/html';
import type { KeyRing } from '../../platform/security/data-protection';
import type { Db } from '../../platform/store/database';
import { ADMIN_PAGES, OIDC_ROUTES } from '../sign-in-paths';
import { adminPageStanding } from '../store/admin-tokens';
import { ADMIN_RESOURCE } from './resources';

/** An operator's page: rendered for the signed-in IdentityAdmin (its user id and e-mail). */
export type AdminPage = (req: Request, res: Response, admin: { userId: string; email: string }) => Promise<void>;

/**
 * The client the admin pages sign in through, built in (no row in the clients store, so no configuration, migration
 * or admin API call can change or take it): a public client with PKCE, as Keycloak's own admin console is a client of
 * its realm. It asks for `openid` only; what the signed-in user may do is decided by the store at every page.
 */
export const ADMIN_PAGES_CLIENT_ID = 'identity-admin-pages';
export const ADMIN_PAGES_CLIENT_NAME = 'Identity admin pages';

/** The built-in client's metadata, for the provider's client look-up. */
export const adminPagesClientMetadata = (issuer: string) => ({
  client_id: ADMIN_PAGES_CLIENT_ID,
  client_name: ADMIN_PAGES_CLIENT_NAME,
  token_endpoint_auth_method: 'none',
  grant_types: ['authorization_code'],
  response_types: ['code'],
  redirect_uris: [`${issuer}${ADMIN_PAGES.signedIn}`],
  post_logout_redirect_uris: [],
  scope: 'openid',
  id_token_signed_response_alg: 'RS256',
  'urn:identity-service:settings': { RequireClientSecret: false, RequirePkce: true, RequireConsent: false },
  'urn:identity-service:cors-origins': [],
  'urn:identity-service:allowed-scopes': ['openid'],
  'urn:identity-service:client-claims': [],
});

/** How long an admin page's sign-in lasts before the next page goes through the provider again (silently, while its session stands). */
const SIGNED_IN_SECONDS = 3600;
/** How long a sign-in the admin pages started may take. */
const PENDING_SECONDS = 600;
const SESSION_COOKIE = 'identity_admin_pages';
const PENDING_COOKIE = 'identity_admin_pages_signin';

/** A value only this service could have made (a keyed hash under the data-protection ring's primary key), with its use in the key. */
function sealed(key: Buffer, use: string, value: object): string {
  const body = Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${body}.${createHmac('sha256', key).update(`${use}:${body}`).digest('base64url')}`;
}

function unsealed<T>(key: Buffer, use: string, text: string | undefined): T | undefined {
  const [body, mac] = (text ?? '').split('.');
  if (!body || !mac) return undefined;
  const expected = Buffer.from(createHmac('sha256', key).update(`${use}:${body}`).digest('base64url'));
  const given = Buffer.from(mac);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
  const value = JSON.parse(Buffer.from(body, 'base64url').toString()) as T & { exp: number };
  return value.exp > Date.now() / 1000 ? value : undefined;
}

const cookieOf = (req: Request, name: string) =>
  (req.headers.cookie ?? '')
    .split(';')
    .map((part) => part.trim().split('='))
    .find(([key]) => key === name)?.[1];

/**
 * The operators' pages (the cutover dashboard), each behind a sign-in through the service's own provider: without a
 * sign-in of the admin pages the browser is sent to /connect/authorize as the built-in client and comes back to
 * `ADMIN_PAGES.signedIn`, where the code is redeemed in process (client, redirect URI, PKCE, once); a signed-in user
 * without the IdentityAdmin role (a role assignment, as the admin API's tokens need) gets a 403 page.
 */
export function adminPagesRouter(deps: {
  provider: () => Provider;
  db: Db;
  ring: KeyRing;
  issuer: string;
  pages: Record<string, AdminPage>;
}): Router {
  const { db, ring, issuer } = deps;
  const key = ring.primary.key;
  const secure = issuer.startsWith('https:') ? '; Secure' : '';
  const setCookie = (res: Response, name: string, value: string, seconds: number) =>
    res.append('Set-Cookie', `${name}=${value}; Path=/admin; HttpOnly; SameSite=Lax; Max-Age=${seconds}${secure}`);
  const redirectUri = `${issuer}${ADMIN_PAGES.signedIn}`;

  /** Sends the browser to sign in, to come back to `returnTo`. */
  function startSignIn(res: Response, returnTo: string) {
    const state = randomBytes(16).toString('base64url');
    const verifier = randomBytes(32).toString('base64url');
    const exp = Math.floor(Date.now() / 1000) + PENDING_SECONDS;
    setCookie(
      res,
      PENDING_COOKIE,
      sealed(key, 'admin-pages-pending', { state, verifier, returnTo, exp }),
      PENDING_SECONDS,
    );
    const url = new URL(`${issuer}${OIDC_ROUTES.authorization}`);
    url.search = new URLSearchParams({
      client_id: ADMIN_PAGES_CLIENT_ID,
      response_type: 'code',
      scope: 'openid',
      redirect_uri: redirectUri,
      state,
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    }).toString();
    res.redirect(303, url.href);
  }

  const gate =
    (path: string, render: AdminPage): RequestHandler =>
    async (req, res) => {
      const session = unsealed<{ sub: string; at: number }>(key, 'admin-pages', cookieOf(req, SESSION_COOKIE));
      if (!session) return startSignIn(res, path);
      const now = await adminPageStanding(db, session.sub, session.at, ADMIN_RESOURCE);
      if (now.standing === 'gone') return startSignIn(res, path);
      if (now.standing === 'lacks-right') return sendPage(res, 403, notAnAdminPage(now.email));
      await render(req, res, { userId: session.sub, email: now.email });
    };

  const router = Router();
  for (const [path, render] of Object.entries(deps.pages)) router.get(path, gate(path, render));
  router.get(ADMIN_PAGES.signedIn, signedIn({ ...deps, key, redirectUri, setCookie }));
  router.get(ADMIN_PAGES.signOut, (_req, res) => {
    setCookie(res, SESSION_COOKIE, '', 0);
    res.redirect(303, OIDC_ROUTES.end_session);
  });
  return router;
}

/** The way back from the provider: the code redeemed in process, the admin pages' sign-in set, the page it was for. */
function signedIn(deps: {
  provider: () => Provider;
  pages: Record<string, AdminPage>;
  key: Buffer;
  redirectUri: string;
  setCookie: (res: Response, name: string, value: string, seconds: number) => void;
}): RequestHandler {
  const { key, setCookie } = deps;
  return async (req, res) => {
    const pending = unsealed<{ state: string; verifier: string; returnTo: string }>(
      key,
      'admin-pages-pending',
      cookieOf(req, PENDING_COOKIE),
    );
    setCookie(res, PENDING_COOKIE, '', 0);
    const { code: value, state, error } = req.query;
    const returnTo = pending && Object.hasOwn(deps.pages, pending.returnTo) ? pending.returnTo : undefined;
    if (!pending || !returnTo || state !== pending.state || typeof value !== 'string')
      return sendPage(res, 400, signInExpiredPage(returnTo, typeof error === 'string'));
    const provider = deps.provider();
    const code = await provider.AuthorizationCode.find(value);
    const verified =
      code?.isValid &&
      code.clientId === ADMIN_PAGES_CLIENT_ID &&
      code.redirectUri === deps.redirectUri &&
      code.codeChallenge === createHash('sha256').update(pending.verifier).digest('base64url') &&
      typeof code.accountId === 'string';
    if (!code || !verified) return sendPage(res, 400, signInExpiredPage(returnTo, false));
    await code.consume();
    const at = Math.floor(Date.now() / 1000);
    const session = sealed(key, 'admin-pages', { sub: code.accountId, at, exp: at + SIGNED_IN_SECONDS });
    setCookie(res, SESSION_COOKIE, session, SIGNED_IN_SECONDS);
    res.redirect(303, returnTo);
  };
}

function notAnAdminPage(email: string): string {
  return page(
    'Not an administrator',
    `<p>You are signed in as <span class="who">${escapeHtml(email)}</span>, which does not hold the
<strong>IdentityAdmin</strong> role. Ask an administrator for it, or sign in as someone who holds it.</p>
<p class="links"><a href="${ADMIN_PAGES.signOut}">Sign out and sign in as someone else</a></p>`,
  );
}

function signInExpiredPage(returnTo: string | undefined, refused: boolean): string {
  const again = returnTo ? `<p class="links"><a href="${escapeHtml(returnTo)}">Sign in again</a></p>` : '';
  return page(
    refused ? 'Sign-in not completed' : 'Sign-in expired',
    `<p>${refused ? 'The sign-in was cancelled or refused.' : 'This sign-in took too long or was already used.'}</p>${again}`,
  );
}
