import type { Profile } from '@node-saml/node-saml';
import type { SamlProviderRow } from '../store/sso-provider-configs';
import type { FederatedIdentity } from './federated-accounts';

const CLAIMS = 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/';
const ATTRIBUTE_NAMES = {
  email: ['email', 'mail', 'emailaddress', `${CLAIMS}emailaddress`, 'urn:oid:0.9.2342.19200300.100.1.3'],
  givenName: ['givenName', 'given_name', 'firstName', `${CLAIMS}givenname`, 'urn:oid:2.5.4.42'],
  familyName: ['sn', 'surname', 'family_name', 'lastName', `${CLAIMS}surname`, 'urn:oid:2.5.4.4'],
};

function attribute(profile: Profile, names: string[]): string | undefined {
  for (const name of names) {
    const value = Object.hasOwn(profile, name) ? profile[name] : undefined;
    const first = Array.isArray(value) ? (value[0] as unknown) : value;
    if (typeof first === 'string' && first.length > 0 && first.length <= 256) return first;
  }
  return undefined;
}

/** Who a verified assertion says signed in, under the attribute names IdPs commonly use. */
export function samlIdentity(row: SamlProviderRow, profile: Profile): FederatedIdentity {
  const email =
    attribute(profile, ATTRIBUTE_NAMES.email) ??
    (/emailAddress$/.test(profile.nameIDFormat) ? profile.nameID : undefined);
  return {
    kind: 'saml',
    providerId: row.id,
    providerName: row.name,
    loginProviderNames: row.login_provider_names,
    allowOtherDomains: row.allow_other_domains,
    subject: profile.nameID,
    email,
    givenName: attribute(profile, ATTRIBUTE_NAMES.givenName),
    familyName: attribute(profile, ATTRIBUTE_NAMES.familyName),
  };
}
