import { generateServiceProviderMetadata, type Profile } from '@node-saml/node-saml';
import type { OidcAdapter } from '../oidc/adapter';
import type { Db } from '../../platform/store/database';
import { findSamlProvider, type SamlProviderRow } from '../store/sso-provider-configs';
import type { FederatedIdentity } from './federated-accounts';
import { FederationCheckError } from './federation-errors';
import { checkBeyondLibrary } from './saml-checks';
import { samlIdentity } from './saml-identity';
import { acsUrl, cacheFor, samlFor, spEntityId, type PendingRequest } from './saml-library';

export interface SamlDependencies {
  db: Db;
  /** Api:PublicUrl. */
  issuer: string;
  /** Pending AuthnRequests (the provider adapter's `SamlRequest` model) and seen assertion ids (`SamlAssertion`). */
  requests: OidcAdapter;
  assertions: OidcAdapter;
}

/**
 * The assertion consumer service: who signed in, and which sign-in interaction to resume (none for an IdP-initiated
 * sign-in, which only a provider with allowIdpInitiated takes).
 */
async function consume(
  deps: SamlDependencies,
  providerId: string,
  samlResponse: string,
): Promise<{ interactionUid?: string; identity: FederatedIdentity }> {
  const { db, issuer, requests } = deps;
  const row = await findSamlProvider(db, providerId);
  if (!row?.enabled) throw new FederationCheckError(`SAML provider ${providerId} is not enabled`);
  const inResponseTo = /InResponseTo="([^"]{1,200})"/.exec(Buffer.from(samlResponse, 'base64').toString('utf8'))?.[1];
  if (!inResponseTo && !row.allow_idp_initiated)
    throw new FederationCheckError('the response answers no request of this service (unsolicited)');
  const pending = inResponseTo
    ? ((await requests.find(inResponseTo)) as (PendingRequest & Record<string, unknown>) | undefined)
    : undefined;
  let profile: Profile | null;
  try {
    ({ profile } = await samlFor(issuer, row, cacheFor(requests, row)).validatePostResponseAsync({
      SAMLResponse: samlResponse,
    }));
  } catch (error) {
    throw new FederationCheckError(`the response failed a check: ${(error as Error).message}`);
  }
  if (!profile) throw new FederationCheckError('the response carries no assertion');
  await checkBeyondLibrary(deps.assertions, row, profile, acsUrl(issuer, row.id));
  // Each request is answered once.
  if (inResponseTo) await requests.destroy(inResponseTo);
  return { interactionUid: pending?.interactionUid, identity: samlIdentity(row, profile) };
}

/**
 * SAML 2.0 sign-in (@node-saml/node-saml) with the checks the library leaves to its caller: node-saml verifies the
 * signature of the response or of its one assertion (so a second, unsigned assertion beside or inside a signed one is
 * refused), the audience, the time conditions and that InResponseTo names a request this service sent; the service
 * adds the assertion's Issuer, the response's Destination and the assertion's Recipient against the ACS URL, the
 * provider the request was sent to, and assertion-id replay.
 */
export function createSamlSignIn(deps: SamlDependencies) {
  const { db, issuer } = deps;
  return {
    /** The IdP's SSO URL with an AuthnRequest (HTTP-Redirect binding), remembered for its InResponseTo. */
    async authorizationUrl(row: SamlProviderRow, interactionUid: string): Promise<string> {
      return samlFor(issuer, row, cacheFor(deps.requests, row, interactionUid)).getAuthorizeUrlAsync('', undefined, {});
    },

    consume: (providerId: string, samlResponse: string) => consume(deps, providerId, samlResponse),

    /** SP metadata for the customer's IdP: entity id and ACS URL. */
    async metadata(providerId: string): Promise<string | undefined> {
      const row = await findSamlProvider(db, providerId);
      if (!row) return undefined;
      return generateServiceProviderMetadata({
        issuer: spEntityId(issuer, row),
        callbackUrl: acsUrl(issuer, row.id),
        identifierFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
        wantAssertionsSigned: true,
      });
    },
  };
}

export type SamlSignIn = ReturnType<typeof createSamlSignIn>;
