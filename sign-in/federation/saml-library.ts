import { SAML, ValidateInResponseTo, type CacheProvider } from '@node-saml/node-saml';
import type { OidcAdapter } from '../oidc/adapter';
import type { SamlProviderRow } from '../store/sso-provider-configs';
import { FederationCheckError } from './federation-errors';

/** How long a person has at their identity provider before the answer is no longer taken. */
const PENDING_SECONDS = 600;
/** Clock difference allowed between this service and an IdP in the assertion's time conditions. */
const CLOCK_SKEW_MS = 90_000;

/** What the service remembers of an AuthnRequest it sent, under the request's id. */
export interface PendingRequest {
  providerId: string;
  interactionUid: string;
  issuedAt: string;
}

/** A certificate as the admin API or the migration gives it: PEM, or bare base64. */
const certificateBody = (value: string) => value.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');

export const acsUrl = (issuer: string, id: string) => `${issuer}/saml/${encodeURIComponent(id)}/acs`;
export const spEntityId = (issuer: string, row: SamlProviderRow) =>
  row.sp_entity_id ?? `${issuer}/saml/${encodeURIComponent(row.id)}`;

/** One request's pending records (kept in `requests`) are bound to the provider they were sent to. */
export function cacheFor(requests: OidcAdapter, row: SamlProviderRow, interactionUid = ''): CacheProvider {
  return {
    async saveAsync(key, value) {
      const pending: PendingRequest = { providerId: row.id, interactionUid, issuedAt: value };
      await requests.upsert(key, { ...pending }, PENDING_SECONDS);
      return { value, createdAt: Date.now() };
    },
    async getAsync(key) {
      const pending = (await requests.find(key)) as (PendingRequest & Record<string, unknown>) | undefined;
      return pending?.providerId === row.id ? pending.issuedAt : null;
    },
    async removeAsync(key) {
      if (key) await requests.destroy(key);
      return key;
    },
  };
}

/** node-saml set up for one provider: its certificate, its issuer, and whether it may start a sign-in itself. */
export function samlFor(issuer: string, row: SamlProviderRow, cache: CacheProvider): SAML {
  if (!row.signing_certificate) throw new FederationCheckError(`SAML provider ${row.id} has no signing certificate`);
  return new SAML({
    entryPoint: row.sso_url,
    issuer: spEntityId(issuer, row),
    audience: spEntityId(issuer, row),
    callbackUrl: acsUrl(issuer, row.id),
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
