import { createHash } from 'node:crypto';
import * as oidc from 'openid-client';
import type { KeyRing } from '../../platform/security/data-protection';
import type { GuardedFetch } from '../../platform/security/guarded-fetch';
import type { Db } from '../../platform/store/database';
import { findOidcProvider, oidcClientSecret, type OidcProviderRow } from '../store/federation';
import type { OidcAdapter } from '../oidc/adapter';
import type { FederatedIdentity } from './accounts';
import { FederationCheckError } from './errors';

/** How long a person has at their identity provider before the answer is no longer taken. */
const PENDING_SECONDS = 600;

/** What the service remembers of an authorization request it sent upstream, under its `state`. */
interface PendingLogin {
  providerId: string;
  interactionUid: string;
  verifier: string;
  nonce: string;
}

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
  const configurations = new Map<string, Promise<oidc.Configuration>>();

  /** Discovery once per provider setting (a changed authority, client or secret discovers again). */
  function configurationOf(row: OidcProviderRow): Promise<oidc.Configuration> {
    const secret = oidcClientSecret(row, ring);
    const key = createHash('sha256')
      .update(JSON.stringify([row.id, row.authority, row.client_id, secret]))
      .digest('hex');
    let configuration = configurations.get(key);
    if (!configuration) {
      configuration = oidc
        .discovery(
          new URL(row.authority),
          row.client_id,
          undefined,
          secret === undefined ? oidc.None() : oidc.ClientSecretPost(secret),
          {
            [oidc.customFetch]: deps.fetch as oidc.CustomFetch,
            // The guarded fetch decides which addresses may be called; http is for loopback test providers.
            execute: new URL(row.authority).protocol === 'http:' ? [oidc.allowInsecureRequests] : [],
          },
        )
        .catch((error: Error) => {
          configurations.delete(key);
          throw new FederationCheckError(
            `the discovery document of ${row.authority} could not be read: ${error.message}`,
          );
        });
      configurations.set(key, configuration);
    }
    return configuration;
  }

  /** The rest of the callback, once the pending login is known. */
  async function finishFor(
    stored: PendingLogin,
    state: string,
    callbackUrl: URL,
  ): Promise<{ interactionUid: string; identity: FederatedIdentity }> {
    const refused = callbackUrl.searchParams.get('error');
    if (refused)
      throw new FederationCheckError(
        `the identity provider refused: ${callbackUrl.searchParams.get('error_description') ?? refused}`,
      );
    const row = await findOidcProvider(db, stored.providerId);
    if (!row?.enabled) throw new FederationCheckError(`identity provider ${stored.providerId} is not enabled`);
    const configuration = await configurationOf(row);
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(configuration, callbackUrl, {
        pkceCodeVerifier: stored.verifier,
        expectedState: state,
        expectedNonce: stored.nonce,
        idTokenExpected: true,
      });
    } catch (error) {
      // openid-client's message is general ("unexpected JWT claim value encountered"); the cause says which.
      const cause = (error as Error).cause;
      const which = cause instanceof Error ? ` (${cause.message})` : '';
      throw new FederationCheckError(`the answer failed a check: ${(error as Error).message}${which}`);
    }
    const claims = tokens.claims()!;
    let email = typeof claims.email === 'string' ? claims.email : undefined;
    let profile: Record<string, unknown> = claims;
    if (!email && tokens.access_token) {
      try {
        profile = await oidc.fetchUserInfo(configuration, tokens.access_token, claims.sub);
      } catch (error) {
        throw new FederationCheckError(`the userinfo answer failed a check: ${(error as Error).message}`);
      }
      email = typeof profile.email === 'string' ? profile.email : undefined;
    }
    const text = (value: unknown) => (typeof value === 'string' && value.length <= 256 ? value : undefined);
    return {
      interactionUid: stored.interactionUid,
      identity: {
        kind: 'oidc',
        providerId: row.id,
        providerName: row.name,
        loginProviderNames: row.login_provider_names,
        allowOtherDomains: row.allow_other_domains,
        subject: claims.sub,
        email: email && email.length <= 256 ? email : undefined,
        givenName: text(profile.given_name),
        familyName: text(profile.family_name),
      },
    };
  }

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
        return await finishFor(stored, state, callbackUrl);
      } catch (error) {
        if (error instanceof FederationCheckError && !error.providerId)
          throw new FederationCheckError(error.message, stored.providerId);
        throw error;
      }
    },
  };
}

export type UpstreamOidc = ReturnType<typeof createUpstreamOidc>;
