import { useHarness, UNLIMITED_SIGN_IN } from '../support/harness';

// Pentest after issue 37 (the SSO-domain rule): the password grant checks the
// SSO-domain rule on the username as typed (isSsoDomainEmail → domainOf: lower case only), while the account is found
// by its normalized address (normalize: NFKC, then upper case). The grant's username is not checked as an e-mail
// address (the sign-in forms' z.email() is ASCII-only), so `user@ｃorp.test` (a fullwidth letter) is no SSO-domain
// address to the rule but finds `user@corp.test`, whose password is then checked and tokens issued.
// A database of its own: the SSO provider and domain it writes are named as other test files name theirs.
const h = useHarness({ apps: {}, ownDatabase: true, config: { Oidc: { ReloadSeconds: 0 }, Auth: UNLIMITED_SIGN_IN } });
const PASSWORD = 'correct horse battery 9';
const SECRET = 'legacy-sso-secret-16';

beforeAll(async () => {
  const client = await h.admin('PUT', '/api/v1/clients/legacy-sso', {
    AllowedGrantTypes: ['client_credentials'],
    AllowedScopes: ['openid'],
    ClientSecrets: [{ Value: SECRET }],
  });
  expect(client.status).toBe(201);
  // As the migration writes a client that had the password grant at IdentityServer, and an SSO provider's domain.
  await h.context.db
    .updateTable('clients')
    .set({ grant_types: JSON.stringify(['password']), origin: 'migration' })
    .where('client_id', '=', 'legacy-sso')
    .execute();
  await h.context.db
    .insertInto('oidc_providers')
    .values({
      id: 'globex',
      name: 'Globex',
      authority: 'https://idp.globex.test',
      client_id: 'svc',
      enabled: true,
    } as never)
    .execute();
  await h.context.db
    .insertInto('sso_domains')
    .values({ domain: 'globex.test', provider_kind: 'oidc', provider_id: 'globex' })
    .execute();
});

const grant = (username: string) =>
  fetch(`${h.api.url}/connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'password',
      client_id: 'legacy-sso',
      client_secret: SECRET,
      username,
      password: PASSWORD,
      scope: 'openid',
    }).toString(),
  });

test('an SSO-domain account gets no password-grant token by a compatibility-equivalent spelling of its address', async () => {
  // An account of the domain with a password (made before the domain became an SSO domain, or migrated with one).
  const local = `emp-${Date.now()}`;
  const created = await h.context.db
    .selectFrom('users')
    .select('id')
    .where('normalized_email', '=', `${local}@GLOBEX.TEST`)
    .executeTakeFirst();
  expect(created).toBeUndefined();
  await h.context.db.deleteFrom('sso_domains').where('domain', '=', 'globex.test').execute();
  const user = await h.admin('POST', '/api/v1/profile/', { email: `${local}@globex.test`, password: PASSWORD });
  expect(user.status).toBe(201);
  await h.context.db
    .insertInto('sso_domains')
    .values({ domain: 'globex.test', provider_kind: 'oidc', provider_id: 'globex' })
    .execute();

  expect((await grant(`${local}@globex.test`)).status).toBe(400);
  // U+FF47 FULLWIDTH LATIN SMALL LETTER G: NFKC makes it `g`, so the account is found; the rule must hold too.
  const bypass = await grant(`${local}@\uff47lobex.test`);
  expect(bypass.status).toBe(400);
  expect(await bypass.json()).toMatchObject({ error: 'invalid_grant' });
});
