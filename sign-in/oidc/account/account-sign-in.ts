import { createHash, randomBytes } from 'node:crypto';
import type { Request, Response } from 'express';
import { clientConfigSchema, type ClientConfig } from '../../../platform/config/config-schema';
import { findClient, putClient } from '../../../platform/store/clients';
import type { Db } from '../../../platform/store/database';
import { OIDC_ROUTES } from '../../sign-in-paths';
import { clientRow } from '../provider-clients';

/**
 * The account pages' own way in, as Keycloak's account console has one: an authorization request through a built-in
 * first-party client, so `/account` opened without a session signs the user in and comes back, instead of a page
 * that says "sign in through an application first".
 */
export const ACCOUNT_CLIENT_ID = 'account-console';
export const ACCOUNT_CALLBACK = '/account/signed-in';
const STATE_COOKIE = 'account.signin';
/** The pages a sign-in of the account pages returns to, by the name the cookie holds: nothing else is taken from it. */
const RETURNS: Record<string, string> = { account: '/account', mfa: '/account/mfa' };
const nameOf = (path: string) => Object.keys(RETURNS).find((name) => RETURNS[name] === path) ?? 'account';

/** The built-in client: public, PKCE, `openid` only, returning to ACCOUNT_CALLBACK under Api:PublicUrl. */
export function accountClient(issuer: string, productName: string): ClientConfig {
  return clientConfigSchema.parse({
    ClientId: ACCOUNT_CLIENT_ID,
    ClientName: `${productName} account`,
    RequireClientSecret: false,
    AllowedGrantTypes: ['authorization_code'],
    RedirectUris: [`${issuer}${ACCOUNT_CALLBACK}`],
    AllowedScopes: ['openid'],
    RequirePkce: true,
  });
}

/**
 * The built-in client in the clients store, written the first time the account pages sign someone in (not at start:
 * a service whose users never open /account, or a store a migration fills, holds only its own clients), and again
 * when Api:PublicUrl or the product name changed.
 */
export async function ensureAccountClient(db: Db, issuer: string, productName: string): Promise<void> {
  const wanted = accountClient(issuer, productName);
  const stored = await findClient(db, ACCOUNT_CLIENT_ID);
  const current =
    stored?.enabled &&
    stored.client_name === wanted.ClientName &&
    stored.redirect_uris.includes(wanted.RedirectUris[0]);
  if (!current) await putClient(db, clientRow(wanted, 'configuration'), [], { keepProvisioningApps: true });
}

const stateOf = (req: Request) => {
  const cookie = /(?:^|;\s*)account\.signin=([A-Za-z0-9_-]{22,64})\.([a-z/]{1,32})(?:;|$)/.exec(
    req.headers.cookie ?? '',
  );
  return cookie ? { state: cookie[1], returnTo: cookie[2] } : undefined;
};

/**
 * Starts the sign-in: a fresh `state` in a cookie (with the page to return to), and the browser off to the
 * authorization endpoint. The code that comes back is not redeemed: the account pages read the provider's session,
 * which the sign-in established; `state` makes sure the return belongs to a sign-in this browser started.
 */
export function startAccountSignIn(res: Response, issuer: string, { returnTo = '/account', login = false } = {}) {
  const state = randomBytes(18).toString('base64url');
  const challenge = createHash('sha256').update(randomBytes(32)).digest('base64url');
  const params = new URLSearchParams({
    client_id: ACCOUNT_CLIENT_ID,
    redirect_uri: `${issuer}${ACCOUNT_CALLBACK}`,
    response_type: 'code',
    scope: 'openid',
    state,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...(login ? { prompt: 'login' } : {}),
  });
  res.cookie(STATE_COOKIE, `${state}.${nameOf(returnTo)}`, {
    httpOnly: true,
    sameSite: 'lax',
    secure: issuer.startsWith('https:'),
    path: '/account',
    maxAge: 3600_000,
  });
  res.redirect(303, `${OIDC_ROUTES.authorization}?${params.toString()}`);
}

/** Where the callback sends the browser: the page the sign-in started from, when `state` is this browser's. */
export function finishAccountSignIn(req: Request, res: Response): string | undefined {
  const expected = stateOf(req);
  res.clearCookie(STATE_COOKIE, { path: '/account' });
  if (!expected || req.query.state !== expected.state || !Object.hasOwn(RETURNS, expected.returnTo)) return undefined;
  return RETURNS[expected.returnTo];
}
