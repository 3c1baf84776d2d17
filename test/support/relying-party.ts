import * as oidc from 'openid-client';
import type { Harness } from './harness';

/**
 * An application of the service at `issuer`, as openid-client sees it from the discovery document: a public client
 * without a secret, or a confidential one posting its secret.
 */
export function relyingParty(issuer: string, clientId: string, secret?: string): Promise<oidc.Configuration> {
  return oidc.discovery(
    new URL(issuer),
    clientId,
    secret,
    secret === undefined ? oidc.None() : oidc.ClientSecretPost(secret),
    { execute: [oidc.allowInsecureRequests] },
  );
}

/** A public code-flow client (no secret, PKCE) returning to `callback`, as the admin API takes one. */
export const publicClient = (callback: string, scopes = ['openid']) => ({
  RequireClientSecret: false,
  AllowedGrantTypes: ['authorization_code'],
  RedirectUris: [callback],
  AllowedScopes: scopes,
});

/** A confidential code-flow client with refresh tokens, returning to `callback`, as the admin API takes one. */
export const confidentialClient = (callback: string, scopes: string[], secret: string) => ({
  AllowedGrantTypes: ['authorization_code'],
  RedirectUris: [callback],
  AllowedScopes: scopes,
  AllowOfflineAccess: true,
  ClientSecrets: [{ Value: secret }],
});

export const PORTAL_CALLBACK = 'https://portal.example.com/cb';

/** The public client `portal` the federation tests sign in to. */
export async function registerPortal(h: Pick<Harness, 'admin'>): Promise<void> {
  const portal = await h.admin('PUT', '/api/v1/clients/portal', {
    ClientName: 'Portal',
    RequireClientSecret: false,
    AllowedGrantTypes: ['authorization_code'],
    RedirectUris: [PORTAL_CALLBACK],
    AllowedScopes: ['openid', 'profile', 'email'],
  });
  if (portal.status !== 201) throw new Error(`registering the portal client answered ${portal.status}`);
}

/** An authorization request with PKCE (S256): where to send the browser, and the verifier for the code exchange. */
export async function authorizationRequest(
  rp: oidc.Configuration,
  params: { redirect_uri: string; scope: string; state?: string },
): Promise<{ url: string; verifier: string }> {
  const verifier = oidc.randomPKCECodeVerifier();
  const url = oidc.buildAuthorizationUrl(rp, {
    ...params,
    code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  return { url: url.href, verifier };
}
