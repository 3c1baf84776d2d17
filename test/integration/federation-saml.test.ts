import { rowsWhere } from '../support/rows';
import { randomUUID } from 'node:crypto';
import * as oidc from 'openid-client';
import { findUserIdByEmail } from '../../platform/store/users';
import { uniqueEmail, useHarness } from '../support/harness';
import { authorizationRequest, PORTAL_CALLBACK, registerPortal, relyingParty } from '../support/relying-party';
import { authnRequestOf, samlAnswer, samlIdentityProvider, type Idp } from '../support/saml-idp';
import { browser, loggedUnder, textOf, type Browser, type Visit } from '../support/sign-in-flow';
import { logger } from '../../platform/observability/logger';

// Initech's SAML identity provider (test/support/saml-idp.ts). A database of its own: providers, domains and clients
// are named the same in other test files.
const h = useHarness({ apps: { crm: {} }, ownDatabase: true });
// A refused response's page shows a reference; the check that failed is in the log line under it.
const warn = jest.spyOn(logger, 'warn');
const IDP_ENTITY_ID = 'https://idp.initech.example/saml';
const IDP_SSO_URL = 'https://idp.initech.example/sso';

let idp: Idp;
let impostor: Idp;
const acs = () => `${h.api.publicUrl}/saml/initech/acs`;
const spEntityId = () => `${h.api.publicUrl}/saml/initech`;

beforeAll(async () => {
  const real = await samlIdentityProvider(IDP_ENTITY_ID, IDP_SSO_URL);
  idp = real.idp;
  impostor = (await samlIdentityProvider(IDP_ENTITY_ID, IDP_SSO_URL)).idp;
  const created = await h.admin('POST', '/api/v1/sso/saml-providers', {
    id: 'initech',
    name: 'Initech',
    entityId: IDP_ENTITY_ID,
    singleSignOnUrl: IDP_SSO_URL,
    signingCertificate: real.cert,
    domains: ['initech.example'],
  });
  expect(created.status).toBe(201);
  await registerPortal(h);
}, 60_000);

interface Started {
  person: Browser;
  requestId: string;
  finish: (end: Visit | URL) => Promise<oidc.TokenEndpointResponse & oidc.TokenEndpointResponseHelpers>;
}

/** Up to the IdP: the portal's authorization request, the e-mail, and the AuthnRequest the browser is sent with. */
async function toTheIdp(email: string): Promise<Started> {
  const rp = await relyingParty(h.api.publicUrl, 'portal');
  const { url, verifier } = await authorizationRequest(rp, { redirect_uri: PORTAL_CALLBACK, scope: 'openid email' });
  const person = browser(IDP_SSO_URL);
  await person.open(url);
  const sso = (await person.submit('/email', { email })) as URL;
  expect(sso.origin + sso.pathname).toBe(IDP_SSO_URL);
  const { id: requestId, xml } = authnRequestOf(sso);
  expect(xml).toContain(`AssertionConsumerServiceURL="${acs()}"`);
  return {
    person: browser(PORTAL_CALLBACK, person.jar),
    requestId,
    finish: async (end) => {
      if (!(end instanceof URL)) throw new Error(`expected the way back to the portal, got: ${textOf(end)}`);
      return oidc.authorizationCodeGrant(rp, end, { pkceCodeVerifier: verifier });
    },
  };
}

/** Initech's answer to a request of the service (from another IdP object: one with another key). */
const samlResponse = (requestId: string, email: string, overrides: Record<string, string> = {}, from: Idp = idp) =>
  samlAnswer({ idp: from, issuer: IDP_ENTITY_ID, spEntityId: spEntityId(), acs: acs(), requestId, email }, overrides);

const postToAcs = (started: Started, SAMLResponse: string) => started.person.post(acs(), { SAMLResponse });
const initech = (label: string) => uniqueEmail(label).replace('@example.test', '@initech.example');

describe('SAML sign-in through the ACS', () => {
  test('a first sign-in creates and provisions the user, links the login and returns to the application', async () => {
    const email = initech('peter');
    const started = await toTheIdp(email);
    const tokens = await started.finish(await postToAcs(started, await samlResponse(started.requestId, email)));
    const userId = await findUserIdByEmail(h.context.db, email);
    expect(tokens.claims()).toMatchObject({ sub: userId, email, amr: ['external'] });
    expect(h.apps.crm.state.confirmedUserIds()).toContain(userId);
    const [login] = await rowsWhere(h.context.db, 'user_logins', { login_provider: 'initech', provider_key: email });
    expect(login).toMatchObject({ user_id: userId });

    // The same person again: known, nothing tried.
    const tries = h.apps.crm.state.calls.filter((c) => c.path === '/try').length;
    const again = await toTheIdp(email);
    await again.finish(await postToAcs(again, await samlResponse(again.requestId, email)));
    expect(h.apps.crm.state.calls.filter((c) => c.path === '/try')).toHaveLength(tries);
  });

  // Issue 37 item 17: Initech could create an account for any address it asserted, outside its SSO domains too.
  test("an address outside Initech's domains gets no account unless the provider allows other domains", async () => {
    const elsewhere = uniqueEmail('bill').replace('@example.test', '@elsewhere.example');
    const started = await toTheIdp(initech('bill'));
    const answer = await postToAcs(started, await samlResponse(started.requestId, elsewhere));
    expect((answer as Visit).status).toBe(400);
    expect(textOf(answer)).toContain('Initech does not sign in users of elsewhere.example');
    expect(await findUserIdByEmail(h.context.db, elsewhere)).toBeUndefined();

    const read = (await h.admin('GET', '/api/v1/sso/saml-providers/initech')).body;
    expect(read.allowOtherDomains).toBe(false);
    const put = (allowOtherDomains: boolean) =>
      h.admin('PUT', '/api/v1/sso/saml-providers/initech', { ...read, allowOtherDomains });
    expect((await put(true)).status).toBe(200);
    try {
      const again = await toTheIdp(initech('bill'));
      const tokens = await again.finish(await postToAcs(again, await samlResponse(again.requestId, elsewhere)));
      expect(tokens.claims()).toMatchObject({
        sub: await findUserIdByEmail(h.context.db, elsewhere),
        email: elsewhere,
      });
    } finally {
      expect((await put(false)).status).toBe(200);
    }
  });

  test("an app's refusal answers 400 with its reason, and the user is gone", async () => {
    h.apps.crm.state.behaviour = { rejectWith: 'Initech has no seats left' };
    const email = initech('milton');
    const started = await toTheIdp(email);
    const answer = await postToAcs(started, await samlResponse(started.requestId, email));
    expect((answer as Visit).status).toBe(400);
    expect(textOf(answer)).toContain('Initech has no seats left');
    expect(await findUserIdByEmail(h.context.db, email)).toBeUndefined();
  });

  const refusals: Array<[string, (requestId: string, email: string) => Promise<string>, RegExp]> = [
    ['signed with another key', (id, email) => samlResponse(id, email, {}, impostor), /Invalid signature/],
    [
      'for another audience',
      (id, email) => samlResponse(id, email, { Audience: 'https://elsewhere.example/sp' }),
      /audience/i,
    ],
    [
      'from another issuer',
      (id, email) => samlResponse(id, email, { Issuer: 'https://evil.example/idp' }),
      /issued by https:\/\/evil.example\/idp/,
    ],
    [
      'for another recipient',
      (id, email) => samlResponse(id, email, { SubjectRecipient: 'https://elsewhere.example/acs' }),
      /recipient is https:\/\/elsewhere.example\/acs/,
    ],
    [
      'to another destination',
      (id, email) => samlResponse(id, email, { Destination: 'https://elsewhere.example/acs' }),
      /addressed to https:\/\/elsewhere.example\/acs/,
    ],
    [
      'whose conditions have expired',
      (id, email) => samlResponse(id, email, { ConditionsNotOnOrAfter: new Date(Date.now() - 600_000).toISOString() }),
      /expired/i,
    ],
    [
      'whose subject confirmation has expired',
      (id, email) =>
        samlResponse(id, email, { SubjectConfirmationDataNotOnOrAfter: new Date(Date.now() - 600_000).toISOString() }),
      /No valid subject confirmation/,
    ],
    ['answering another request', (_id, email) => samlResponse(`_${randomUUID()}`, email), /InResponseTo/],
    ['unsolicited', (_id, email) => samlResponse('', email), /unsolicited/],
    [
      'with an unsigned assertion beside the signed one (signature wrapping)',
      async (id, email) => {
        const xml = Buffer.from(await samlResponse(id, email), 'base64').toString('utf8');
        const signed = /<saml:Assertion[\s\S]*<\/saml:Assertion>/.exec(xml)![0];
        const forged = signed
          .replace(/<ds:Signature[\s\S]*<\/ds:Signature>/, '')
          .replace(/ID="[^"]+"/, `ID="_${randomUUID()}"`)
          .replace(email, 'admin@initech.example');
        return Buffer.from(xml.replace(signed, forged + signed)).toString('base64');
      },
      /multiple assertions/,
    ],
  ];

  test.each(refusals)(
    'a response %s is refused with a page naming the check, and nothing is created',
    async (_what, make, reason) => {
      const email = initech('lumbergh');
      const started = await toTheIdp(email);
      const answer = await postToAcs(started, await make(started.requestId, email));
      expect((answer as Visit).status).toBe(400);
      expect(textOf(answer)).toContain('Sign-in through your organization did not work');
      expect(loggedUnder(answer, warn)).toMatch(reason);
      expect(await findUserIdByEmail(h.context.db, email)).toBeUndefined();
      expect(await findUserIdByEmail(h.context.db, 'admin@initech.example')).toBeUndefined();
    },
  );

  test('a replayed assertion is refused, even answering a new request', async () => {
    const email = initech('samir');
    const first = await toTheIdp(email);
    const assertionId = `_${randomUUID()}`;
    await first.finish(
      await postToAcs(first, await samlResponse(first.requestId, email, { AssertionID: assertionId })),
    );
    // The same response again: its request was answered.
    const again = await postToAcs(first, await samlResponse(first.requestId, email, { AssertionID: assertionId }));
    expect((again as Visit).status).toBe(400);
    // The same assertion id answering a new request.
    const second = await toTheIdp(email);
    const replayed = await postToAcs(second, await samlResponse(second.requestId, email, { AssertionID: assertionId }));
    expect((replayed as Visit).status).toBe(400);
    expect(loggedUnder(replayed, warn)).toContain('this assertion was used already (replay)');
  });

  test('with allowIdpInitiated on, an unsolicited response that passes every check creates the account and says how to go on', async () => {
    const provider = await h.admin('GET', '/api/v1/sso/saml-providers/initech');
    const put = (allowIdpInitiated: boolean) =>
      h.admin('PUT', '/api/v1/sso/saml-providers/initech', { ...provider.body, allowIdpInitiated });
    expect((await put(true)).status).toBe(200);
    try {
      const email = initech('bill');
      const answer = await browser(PORTAL_CALLBACK).post(acs(), { SAMLResponse: await samlResponse('', email) });
      expect((answer as Visit).status).toBe(200);
      expect(textOf(answer)).toContain('Your account is ready');
      const userId = await findUserIdByEmail(h.context.db, email);
      expect(h.apps.crm.state.confirmedUserIds()).toContain(userId);
      // Still every other check: another key is refused.
      const forged = await browser(PORTAL_CALLBACK).post(acs(), {
        SAMLResponse: await samlResponse('', initech('bob'), {}, impostor),
      });
      expect((forged as Visit).status).toBe(400);
    } finally {
      expect((await put(false)).status).toBe(200);
    }
  });

  test('SP metadata names the entity id and the ACS URL', async () => {
    const response = await fetch(`${h.api.url}/saml/initech/metadata`);
    expect(response.status).toBe(200);
    const xml = await response.text();
    expect(xml).toContain(`entityID="${spEntityId()}"`);
    expect(xml).toContain(`Location="${acs()}"`);
    expect((await fetch(`${h.api.url}/saml/nobody/metadata`)).status).toBe(404);
  });
});
