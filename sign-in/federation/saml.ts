import { DOMParser } from '@xmldom/xmldom';
import {
  generateServiceProviderMetadata,
  SAML,
  ValidateInResponseTo,
  type CacheProvider,
  type Profile,
} from '@node-saml/node-saml';
import type { OidcAdapter } from '../oidc/adapter';
import type { Db } from '../../platform/store/database';
import { findSamlProvider, type SamlProviderRow } from '../store/federation';
import type { FederatedIdentity } from './accounts';
import { FederationCheckError } from './errors';

/** How long a person has at their identity provider before the answer is no longer taken. */
const PENDING_SECONDS = 600;
/** Clock difference allowed between this service and an IdP in the assertion's time conditions. */
const CLOCK_SKEW_MS = 90_000;

const CLAIMS = 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/';
const ATTRIBUTE_NAMES = {
  email: ['email', 'mail', 'emailaddress', `${CLAIMS}emailaddress`, 'urn:oid:0.9.2342.19200300.100.1.3'],
  givenName: ['givenName', 'given_name', 'firstName', `${CLAIMS}givenname`, 'urn:oid:2.5.4.42'],
  familyName: ['sn', 'surname', 'family_name', 'lastName', `${CLAIMS}surname`, 'urn:oid:2.5.4.4'],
};

/** What the service remembers of an AuthnRequest it sent, under the request's id. */
interface PendingRequest {
  providerId: string;
  interactionUid: string;
  issuedAt: string;
}

export interface SamlDependencies {
  db: Db;
  /** Api:PublicUrl. */
  issuer: string;
  /** Pending AuthnRequests (the provider adapter's `SamlRequest` model) and seen assertion ids (`SamlAssertion`). */
  requests: OidcAdapter;
  assertions: OidcAdapter;
}

/** A certificate as the admin API or the migration gives it: PEM, or bare base64. */
const certificateBody = (value: string) => value.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');

/**
 * SAML 2.0 sign-in (@node-saml/node-saml) with the checks the library leaves to its caller: node-saml verifies the
 * signature of the response or of its one assertion (so a second, unsigned assertion beside or inside a signed one is
 * refused), the audience, the time conditions and that InResponseTo names a request this service sent; the service
 * adds the assertion's Issuer, the response's Destination and the assertion's Recipient against the ACS URL, the
 * provider the request was sent to, and assertion-id replay.
 */
export function createSamlSignIn(deps: SamlDependencies) {
  const { db, issuer } = deps;
  const acsUrl = (id: string) => `${issuer}/saml/${encodeURIComponent(id)}/acs`;
  const spEntityId = (row: SamlProviderRow) => row.sp_entity_id ?? `${issuer}/saml/${encodeURIComponent(row.id)}`;

  /** One request's pending records are bound to the provider they were sent to. */
  function cacheFor(row: SamlProviderRow, interactionUid = ''): CacheProvider {
    return {
      async saveAsync(key, value) {
        const pending: PendingRequest = { providerId: row.id, interactionUid, issuedAt: value };
        await deps.requests.upsert(key, { ...pending }, PENDING_SECONDS);
        return { value, createdAt: Date.now() };
      },
      async getAsync(key) {
        const pending = (await deps.requests.find(key)) as (PendingRequest & Record<string, unknown>) | undefined;
        return pending?.providerId === row.id ? pending.issuedAt : null;
      },
      async removeAsync(key) {
        if (key) await deps.requests.destroy(key);
        return key;
      },
    };
  }

  function samlFor(row: SamlProviderRow, cache: CacheProvider): SAML {
    if (!row.signing_certificate) throw new FederationCheckError(`SAML provider ${row.id} has no signing certificate`);
    return new SAML({
      entryPoint: row.sso_url,
      issuer: spEntityId(row),
      audience: spEntityId(row),
      callbackUrl: acsUrl(row.id),
      idpCert: certificateBody(row.signing_certificate),
      idpIssuer: row.entity_id,
      wantAuthnResponseSigned: false,
      wantAssertionsSigned: false,
      validateInResponseTo: row.allow_idp_initiated ? ValidateInResponseTo.ifPresent : ValidateInResponseTo.always,
      requestIdExpirationPeriodMs: PENDING_SECONDS * 1000,
      cacheProvider: cache,
      acceptedClockSkewMs: CLOCK_SKEW_MS,
      identifierFormat: null,
      disableRequestedAuthnContext: true,
    });
  }

  /** The checks node-saml does not make, on the verified assertion and the response around it. */
  async function checkBeyondLibrary(row: SamlProviderRow, profile: Profile): Promise<void> {
    if (profile.issuer !== row.entity_id)
      throw new FederationCheckError(`the assertion was issued by ${profile.issuer}, not by ${row.entity_id}`);
    const response = new DOMParser().parseFromString(profile.getSamlResponseXml!(), 'text/xml').documentElement;
    const destination = response.getAttribute('Destination');
    if (destination && destination !== acsUrl(row.id))
      throw new FederationCheckError(`the response is addressed to ${destination}, not to this service`);
    const assertion = new DOMParser().parseFromString(profile.getAssertionXml!(), 'text/xml').documentElement;
    const confirmations = assertion.getElementsByTagNameNS(
      'urn:oasis:names:tc:SAML:2.0:assertion',
      'SubjectConfirmationData',
    );
    for (let i = 0; i < confirmations.length; i++) {
      const recipient = confirmations.item(i)!.getAttribute('Recipient');
      if (recipient && recipient !== acsUrl(row.id))
        throw new FederationCheckError(`the assertion's recipient is ${recipient}, not this service`);
    }
    const id = assertion.getAttribute('ID');
    if (!id) throw new FederationCheckError('the assertion has no ID');
    // Remembered as long as any assertion could still be within its time conditions.
    const seen = await deps.assertions.find(`${row.id}:${id}`);
    if (seen) throw new FederationCheckError('this assertion was used already (replay)');
    await deps.assertions.upsert(`${row.id}:${id}`, { at: Date.now() }, 24 * 3600);
  }

  function attribute(profile: Profile, names: string[]): string | undefined {
    for (const name of names) {
      const value = Object.hasOwn(profile, name) ? profile[name] : undefined;
      const first = Array.isArray(value) ? (value[0] as unknown) : value;
      if (typeof first === 'string' && first.length > 0 && first.length <= 256) return first;
    }
    return undefined;
  }

  return {
    /** The IdP's SSO URL with an AuthnRequest (HTTP-Redirect binding), remembered for its InResponseTo. */
    async authorizationUrl(row: SamlProviderRow, interactionUid: string): Promise<string> {
      return samlFor(row, cacheFor(row, interactionUid)).getAuthorizeUrlAsync('', undefined, {});
    },

    /**
     * The assertion consumer service: who signed in, and which sign-in interaction to resume (none for an IdP-initiated
     * sign-in, which only a provider with allowIdpInitiated takes).
     */
    async consume(
      providerId: string,
      samlResponse: string,
    ): Promise<{ interactionUid?: string; identity: FederatedIdentity }> {
      const row = await findSamlProvider(db, providerId);
      if (!row?.enabled) throw new FederationCheckError(`SAML provider ${providerId} is not enabled`);
      const inResponseTo = /InResponseTo="([^"]{1,200})"/.exec(
        Buffer.from(samlResponse, 'base64').toString('utf8'),
      )?.[1];
      if (!inResponseTo && !row.allow_idp_initiated)
        throw new FederationCheckError('the response answers no request of this service (unsolicited)');
      const pending = inResponseTo
        ? ((await deps.requests.find(inResponseTo)) as (PendingRequest & Record<string, unknown>) | undefined)
        : undefined;
      let profile: Profile | null;
      try {
        ({ profile } = await samlFor(row, cacheFor(row)).validatePostResponseAsync({ SAMLResponse: samlResponse }));
      } catch (error) {
        throw new FederationCheckError(`the response failed a check: ${(error as Error).message}`);
      }
      if (!profile) throw new FederationCheckError('the response carries no assertion');
      await checkBeyondLibrary(row, profile);
      // Each request is answered once.
      if (inResponseTo) await deps.requests.destroy(inResponseTo);
      const email =
        attribute(profile, ATTRIBUTE_NAMES.email) ??
        (/emailAddress$/.test(profile.nameIDFormat) ? profile.nameID : undefined);
      return {
        interactionUid: pending?.interactionUid,
        identity: {
          kind: 'saml',
          providerId: row.id,
          providerName: row.name,
          loginProviderNames: row.login_provider_names,
          allowOtherDomains: row.allow_other_domains,
          subject: profile.nameID,
          email,
          givenName: attribute(profile, ATTRIBUTE_NAMES.givenName),
          familyName: attribute(profile, ATTRIBUTE_NAMES.familyName),
        },
      };
    },

    /** SP metadata for the customer's IdP: entity id and ACS URL. */
    async metadata(providerId: string): Promise<string | undefined> {
      const row = await findSamlProvider(db, providerId);
      if (!row) return undefined;
      return generateServiceProviderMetadata({
        issuer: spEntityId(row),
        callbackUrl: acsUrl(row.id),
        identifierFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
        wantAssertionsSigned: true,
      });
    },
  };
}

export type SamlSignIn = ReturnType<typeof createSamlSignIn>;
