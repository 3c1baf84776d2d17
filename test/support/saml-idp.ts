import { randomUUID } from 'node:crypto';
import { inflateRawSync } from 'node:zlib';
import * as samlify from 'samlify';
import { generate } from 'selfsigned';

// samlify checks its own XML against the SAML schema through a plug-in that needs Java; node-saml, on the service's
// side, is what the tests check.
samlify.setSchemaValidator({ validate: () => Promise.resolve('skipped') });

export const EMAIL_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';

export type Idp = ReturnType<typeof samlify.IdentityProvider>;

/**
 * A company's SAML identity provider for the tests: samlify with a key and certificate made now. It is not a server:
 * a test stops the browser at `ssoUrl`, reads the AuthnRequest, and posts the answer to the ACS as the IdP's
 * auto-submitting form would.
 */
export async function samlIdentityProvider(entityId: string, ssoUrl: string): Promise<{ idp: Idp; cert: string }> {
  const pems = await generate([{ name: 'commonName', value: new URL(entityId).hostname }], {
    keySize: 2048,
    algorithm: 'sha256',
  });
  return {
    cert: pems.cert,
    idp: samlify.IdentityProvider({
      entityID: entityId,
      privateKey: pems.private,
      signingCert: pems.cert,
      singleSignOnService: [{ Binding: samlify.Constants.namespace.binding.redirect, Location: ssoUrl }],
      nameIDFormat: [EMAIL_FORMAT],
    }),
  };
}

/** The id of the AuthnRequest in an HTTP-Redirect URL to the IdP, and the request's XML. */
export function authnRequestOf(sso: URL): { id: string; xml: string } {
  const xml = inflateRawSync(Buffer.from(sso.searchParams.get('SAMLRequest')!, 'base64')).toString('utf8');
  return { id: /ID="([^"]+)"/.exec(xml)![1], xml };
}

export interface AnswerTo {
  idp: Idp;
  /** The IdP's entity id, as its answers name their issuer. */
  issuer: string;
  /** The service's SP entity id and ACS URL for this IdP. */
  spEntityId: string;
  acs: string;
  requestId: string;
  email: string;
}

/** The IdP's base64 SAMLResponse, every value of its template chosen here (so a test can make any of them wrong). */
export async function samlAnswer(to: AnswerTo, overrides: Record<string, string> = {}): Promise<string> {
  const sp = samlify.ServiceProvider({
    entityID: to.spEntityId,
    assertionConsumerService: [{ Binding: samlify.Constants.namespace.binding.post, Location: to.acs }],
    wantAssertionsSigned: true,
  });
  const now = Date.now();
  const values = {
    ID: `_${randomUUID()}`,
    AssertionID: `_${randomUUID()}`,
    Destination: to.acs,
    Audience: to.spEntityId,
    SubjectRecipient: to.acs,
    Issuer: to.issuer,
    IssueInstant: new Date(now).toISOString(),
    StatusCode: 'urn:oasis:names:tc:SAML:2.0:status:Success',
    ConditionsNotBefore: new Date(now - 60_000).toISOString(),
    ConditionsNotOnOrAfter: new Date(now + 300_000).toISOString(),
    SubjectConfirmationDataNotOnOrAfter: new Date(now + 300_000).toISOString(),
    NameIDFormat: EMAIL_FORMAT,
    NameID: to.email,
    InResponseTo: to.requestId,
    AuthnStatement: '',
    AttributeStatement: '',
    ...overrides,
  };
  const { context } = await to.idp.createLoginResponse(
    sp,
    { extract: { request: { id: to.requestId } } },
    'post',
    { email: to.email },
    (template: string) => ({ id: values.ID, context: samlify.SamlLib.replaceTagsByValue(template, values) }),
  );
  return context;
}
