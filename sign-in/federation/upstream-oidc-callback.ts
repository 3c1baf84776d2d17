import * as oidc from 'openid-client';
import type { Db } from '../../platform/store/database';
import { findOidcProvider, type OidcProviderRow } from '../store/sso-provider-configs';
import type { FederatedIdentity } from './federated-accounts';
import { FederationCheckError } from './federation-errors';
import type { ConfigurationOf } from './upstream-oidc-discovery';

/** What the service remembers of an authorization request it sent upstream, under its `state`. */
export interface PendingLogin {
  providerId: string;
  interactionUid: string;
  verifier: string;
  nonce: string;
}

type Tokens = Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;

/** The code exchange, with its checks (state, issuer, audience, nonce, signature). */
async function exchangeCode(
  configuration: oidc.Configuration,
  stored: PendingLogin,
  state: string,
  callbackUrl: URL,
): Promise<Tokens> {
  try {
    return await oidc.authorizationCodeGrant(configuration, callbackUrl, {
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
}

/** Who signed in, from the ID token's claims, or from userinfo when the ID token carries no e-mail. */
async function identityOf(
  row: OidcProviderRow,
  configuration: oidc.Configuration,
  tokens: Tokens,
): Promise<FederatedIdentity> {
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
    kind: 'oidc',
    providerId: row.id,
    providerName: row.name,
    loginProviderNames: row.login_provider_names,
    allowOtherDomains: row.allow_other_domains,
    subject: claims.sub,
    email: email && email.length <= 256 ? email : undefined,
    givenName: text(profile.given_name),
    familyName: text(profile.family_name),
  };
}

/** The rest of the callback, once the pending login is known. */
export async function finishCallback(
  { db, configurationOf }: { db: Db; configurationOf: ConfigurationOf },
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
  const tokens = await exchangeCode(configuration, stored, state, callbackUrl);
  return { interactionUid: stored.interactionUid, identity: await identityOf(row, configuration, tokens) };
}
