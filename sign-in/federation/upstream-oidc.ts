import * as oidc from 'openid-client';
import type { KeyRing } from '../../platform/security/data-protection';
import type { GuardedFetch } from '../../platform/security/guarded-fetch';
import type { Db } from '../../platform/store/database';
import type { OidcProviderRow } from '../store/sso-provider-configs';
import type { OidcAdapter } from '../oidc/adapter';
import type { FederatedIdentity } from './federated-accounts';
import { FederationCheckError } from './federation-errors';
import { finishCallback, type PendingLogin } from './upstream-oidc-callback';
import { createDiscovery } from './upstream-oidc-discovery';

/** How long a person has at their identity provider before the answer is no longer taken. */
const PENDING_SECONDS = 600;

export interface UpstreamOidcDependencies {
  db: Db;
  ring: KeyRing;
  /** Where the provider sends the browser back: `{Api:PublicUrl}/oidc/callback`. */
  redirectUri: string;
  fetch: GuardedFetch;
  /** The store of pending logins (the provider adapter's `UpstreamLogin` model). */
  pending: OidcAdapter;
}

/**
 * Sign-in at an upstream OpenID provider (openid-client): the authorization request with PKCE, `state` and `nonce`,
 * then the callback's checks (state known and unused, issuer, audience, nonce, signature, through the code exchange).
 * Discovery goes through the guarded fetch: the authority and every endpoint it names obey the callback-address rule.
 */
export function createUpstreamOidc(deps: UpstreamOidcDependencies) {
  const { db, ring, redirectUri } = deps;
  const configurationOf = createDiscovery(ring, deps.fetch);

  return {
    /** The URL of the provider's authorization endpoint to send the browser to. */
    async authorizationUrl(row: OidcProviderRow, interactionUid: string, loginHint: string): Promise<string> {
      const configuration = await configurationOf(row);
      const verifier = oidc.randomPKCECodeVerifier();
      const state = oidc.randomState();
      const nonce = oidc.randomNonce();
      const pending: PendingLogin = { providerId: row.id, interactionUid, verifier, nonce };
      await deps.pending.upsert(state, { ...pending }, PENDING_SECONDS);
      const scopes = row.scopes.length > 0 ? row.scopes : ['openid', 'email', 'profile'];
      return oidc.buildAuthorizationUrl(configuration, {
        redirect_uri: redirectUri,
        scope: [...new Set(['openid', ...scopes])].join(' '),
        state,
        nonce,
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        login_hint: loginHint,
      }).href;
    },

    /**
     * The callback: who signed in, and which sign-in interaction to resume. Each `state` is taken once. A failed
     * check throws FederationCheckError naming it.
     */
    async complete(callbackUrl: URL): Promise<{ interactionUid: string; identity: FederatedIdentity }> {
      const state = callbackUrl.searchParams.get('state');
      if (!state) throw new FederationCheckError('the answer carries no state');
      const stored = (await deps.pending.find(state)) as (PendingLogin & Record<string, unknown>) | undefined;
      if (!stored) throw new FederationCheckError('the state is unknown, expired or already used');
      await deps.pending.destroy(state);
      try {
        return await finishCallback({ db, configurationOf }, stored, state, callbackUrl);
      } catch (error) {
        if (error instanceof FederationCheckError && !error.providerId)
          throw new FederationCheckError(error.message, stored.providerId);
        throw error;
      }
    },
  };
}

export type UpstreamOidc = ReturnType<typeof createUpstreamOidc>;
