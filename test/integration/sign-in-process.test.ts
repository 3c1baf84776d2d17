import { randomUUID } from 'node:crypto';
import * as oidc from 'openid-client';
import { freePort } from '../../dev/ports';
import { createDb, migrateToLatest, type Db } from '../../platform/store/database';
import { insertUser } from '../../platform/store/users';
import { ADMIN_KEY, serviceProcessEnv, stopAfterAll } from '../support/harness';
import { authorizationRequest, relyingParty } from '../support/relying-party';
import { spawnService, waitForOutput, type ServiceProcess } from '../support/service-process';
import { authnRequestOf, samlAnswer, samlIdentityProvider } from '../support/saml-idp';
import { browser, textOf } from '../support/sign-in-flow';
import { globexProvider, startUpstreamProvider, type UpstreamProvider } from '../support/upstream-provider';

// The sign-in half in a process of its own, run as `npm run api` runs it: with --disable-proto=throw, so a protocol
// library that reaches for `__proto__` (oidc-provider, openid-client, node-saml and their XML libraries) fails here.
// No worker serves its task queue, so nothing here creates a user through a workflow.
const CALLBACK = 'https://proc-portal.example.com/cb';
/** Initech's SAML identity provider, as the service is told of it. */
const IDP = { entity: 'https://idp.proc-initech.example', sso: 'https://idp.proc-initech.example/sso' };

let service: ServiceProcess;
let base: string;
let upstream: UpstreamProvider;
let db: Db;

const admin = async (method: string, path: string, body?: unknown) => {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json().catch(() => undefined)) as Record<string, unknown> };
};

beforeAll(async () => {
  db = createDb(process.env.TEST_DATABASE_URL!, 2);
  await migrateToLatest(db);
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  service = spawnService(
    'api/server.ts',
    {
      ...serviceProcessEnv(`test-unserved-${randomUUID()}`),
      PORT: String(port),
      Api__PublicUrl: base,
      Auth__AllowedInternalTargets__0: '127.0.0.1',
      Auth__AllowedInternalTargets__1: '127.0.0.2',
    },
    ['--disable-proto=throw'],
  );
  await waitForOutput(service, /api: listening on/);
  upstream = await startUpstreamProvider('127.0.0.2', `${base}/oidc/callback`);
}, 60_000);

stopAfterAll(() => [service, upstream, db]);

test('clients, tokens, home-realm discovery to an OIDC and a SAML provider, and a SAML sign-in work under --disable-proto=throw', async () => {
  expect(
    (
      await admin('PUT', '/api/v1/clients/proc-machine', {
        AllowedGrantTypes: ['client_credentials'],
        AllowedScopes: ['IdentityAdmin'],
        ClientSecrets: [{ Value: 'proc-machine-secret!' }],
      })
    ).status,
  ).toBe(201);
  const machine = await relyingParty(base, 'proc-machine', 'proc-machine-secret!');
  const token = await oidc.clientCredentialsGrant(machine, { scope: 'IdentityAdmin' });
  const clients = await fetch(`${base}/api/v1/clients`, { headers: { authorization: `Bearer ${token.access_token}` } });
  expect(clients.status).toBe(200);

  expect(
    (
      await admin('PUT', '/api/v1/clients/proc-portal', {
        RequireClientSecret: false,
        AllowedGrantTypes: ['authorization_code'],
        RedirectUris: [CALLBACK],
        AllowedScopes: ['openid', 'email'],
      })
    ).status,
  ).toBe(201);
  const initech = await samlIdentityProvider(IDP.entity, IDP.sso);
  expect(
    (
      await admin('POST', '/api/v1/sso/saml-providers', {
        id: 'proc-initech',
        name: 'Initech',
        entityId: IDP.entity,
        singleSignOnUrl: IDP.sso,
        signingCertificate: initech.cert,
        domains: ['proc-initech.example'],
      })
    ).status,
  ).toBe(201);
  expect(
    (await admin('POST', '/api/v1/sso/oidc-providers', globexProvider(upstream, 'proc-globex', 'proc-globex.example')))
      .status,
  ).toBe(201);
  const portal = await relyingParty(base, 'proc-portal');
  const start = async (stopAt: string, email: string) => {
    const { url, verifier } = await authorizationRequest(portal, { redirect_uri: CALLBACK, scope: 'openid email' });
    const person = browser(stopAt);
    await person.open(url);
    return { person, verifier, next: await person.submit('/email', { email }) };
  };

  // OIDC: discovery of the upstream provider through the guarded fetch, then the authorization request.
  const toGlobex = await start(upstream.url, 'someone@proc-globex.example');
  expect((toGlobex.next as URL).pathname).toBe('/auth');

  // SAML: the AuthnRequest, then the IdP's signed answer for a user of the domain (linked, so no workflow runs).
  const email = `proc-${randomUUID().slice(0, 8)}@proc-initech.example`;
  const user = await insertUser(
    db,
    { userId: randomUUID(), email, firstName: null, lastName: null, organizationId: null, customAttributes: {} },
    null,
  );
  const toInitech = await start(IDP.sso, email);
  const acs = `${base}/saml/proc-initech/acs`;
  const answer = await samlAnswer({
    idp: initech.idp,
    issuer: IDP.entity,
    spEntityId: `${base}/saml/proc-initech`,
    acs,
    requestId: authnRequestOf(toInitech.next as URL).id,
    email,
  });
  const back = await browser(CALLBACK, toInitech.person.jar).post(acs, { SAMLResponse: answer });
  if (!(back instanceof URL)) throw new Error(`expected the way back to the portal, got: ${textOf(back)}`);
  const tokens = await oidc.authorizationCodeGrant(portal, back, { pkceCodeVerifier: toInitech.verifier });
  expect(tokens.claims()).toMatchObject({ sub: user.userId, email });

  expect((await fetch(`${base}/saml/proc-initech/metadata`)).status).toBe(200);
  expect(service.output()).not.toMatch(/__proto__|TypeError/);
}, 60_000);
