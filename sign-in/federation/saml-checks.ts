import { DOMParser } from '@xmldom/xmldom';
import type { Profile } from '@node-saml/node-saml';
import type { OidcAdapter } from '../oidc/adapter';
import type { SamlProviderRow } from '../store/sso-provider-configs';
import { FederationCheckError } from './federation-errors';

/** Where the assertion must be addressed to: the ACS URL of its provider here. */
function checkRecipients(profile: Profile, acs: string): Element {
  const response = new DOMParser().parseFromString(profile.getSamlResponseXml!(), 'text/xml').documentElement;
  const destination = response.getAttribute('Destination');
  if (destination && destination !== acs)
    throw new FederationCheckError(`the response is addressed to ${destination}, not to this service`);
  const assertion = new DOMParser().parseFromString(profile.getAssertionXml!(), 'text/xml').documentElement;
  const confirmations = assertion.getElementsByTagNameNS(
    'urn:oasis:names:tc:SAML:2.0:assertion',
    'SubjectConfirmationData',
  );
  for (let i = 0; i < confirmations.length; i++) {
    const recipient = confirmations.item(i)!.getAttribute('Recipient');
    if (recipient && recipient !== acs)
      throw new FederationCheckError(`the assertion's recipient is ${recipient}, not this service`);
  }
  return assertion;
}

/**
 * The checks node-saml does not make, on the verified assertion and the response around it: the issuer, the
 * recipients, and that the assertion (remembered in `assertions`) is not used twice.
 */
export async function checkBeyondLibrary(
  assertions: OidcAdapter,
  row: SamlProviderRow,
  profile: Profile,
  acs: string,
): Promise<void> {
  if (profile.issuer !== row.entity_id)
    throw new FederationCheckError(`the assertion was issued by ${profile.issuer}, not by ${row.entity_id}`);
  const assertion = checkRecipients(profile, acs);
  const id = assertion.getAttribute('ID');
  if (!id) throw new FederationCheckError('the assertion has no ID');
  // Remembered as long as any assertion could still be within its time conditions.
  const seen = await assertions.find(`${row.id}:${id}`);
  if (seen) throw new FederationCheckError('this assertion was used already (replay)');
  await assertions.upsert(`${row.id}:${id}`, { at: Date.now() }, 24 * 3600);
}
