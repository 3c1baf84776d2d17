import { rowsWhere } from '../support/rows';
import { verifyPassword } from '../../platform/security/password-hashing';
import { listProvisionedApps } from '../../platform/store/provisions';
import {
  eventually,
  storedPasswordHash,
  uniqueEmail,
  useHarness,
  type Harness,
  type HttpResult,
} from '../support/harness';

let token: string;

const SCIM_JSON = 'application/scim+json';
const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
const ERROR = 'urn:ietf:params:scim:api:messages:2.0:Error';
const ENTERPRISE = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

const h = useHarness({ apps: { crm: {}, billing: {} } }, async (started) => {
  token = (await started.admin('POST', '/api/v1/scim/tokens', { description: 'okta' })).body.token;
});

const scim: Harness['request'] = (method, path, body, headers = {}) =>
  h.request(method, `/scim/v2${path}`, body === undefined ? undefined : JSON.stringify(body), {
    authorization: `Bearer ${token}`,
    ...(body === undefined ? {} : { 'content-type': SCIM_JSON }),
    ...headers,
  });
/** A SCIM PATCH (RFC 7644 §3.5.2) of these operations. */
const patch = (path: string, operations: object[]) =>
  scim('PATCH', path, { schemas: [PATCH_OP], Operations: operations });

const filter = (expression: string) => `/Users?filter=${encodeURIComponent(expression)}`;
/** The ids of a list response's resources, in order. */
const idsOf = (list: { body: { Resources: Array<{ id: string }> } }) => list.body.Resources.map((r) => r.id);

function oktaUser(email: string, extra: Record<string, unknown> = {}) {
  return {
    schemas: [USER],
    userName: email,
    name: { givenName: 'Okta', familyName: 'User' },
    emails: [{ primary: true, value: email, type: 'work' }],
    displayName: 'Okta User',
    locale: 'en-US',
    externalId: `00u${Math.random().toString(36).slice(2, 10)}`,
    groups: [],
    password: 'Okta-Pa55word-long',
    active: true,
    ...extra,
  };
}

function expectScimError(res: HttpResult, status: number, scimType?: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toContain(SCIM_JSON);
  expect(res.body.schemas).toEqual([ERROR]);
  expect(res.body.status).toBe(String(status));
  if (scimType) expect(res.body.scimType).toBe(scimType);
}

describe('SCIM tokens', () => {
  test('an admin creates a token (shown once), lists tokens without secrets, and revokes one', async () => {
    const created = await h.admin('POST', '/api/v1/scim/tokens', { description: 'entra' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ id: expect.any(String), token: expect.stringMatching(/^scim_/) });
    const list = await h.admin('GET', '/api/v1/scim/tokens');
    expect(list.body).toEqual(
      expect.arrayContaining([expect.objectContaining({ id: created.body.id, description: 'entra' })]),
    );
    expect(JSON.stringify(list.body)).not.toContain(created.body.token);
    const [stored] = await rowsWhere(h.context.db, 'scim_tokens', { id: created.body.id });
    expect(stored.token_hash).not.toContain(created.body.token);

    const withIt = await h.request('GET', '/scim/v2/Users', undefined, {
      authorization: `Bearer ${created.body.token}`,
    });
    expect(withIt.status).toBe(200);
    expect((await h.admin('DELETE', `/api/v1/scim/tokens/${created.body.id}`)).status).toBe(204);
    expectScimError(
      await h.request('GET', '/scim/v2/Users', undefined, { authorization: `Bearer ${created.body.token}` }),
      401,
    );
    expectScimError(await h.request('GET', '/scim/v2/Users'), 401);
    expect((await h.request('POST', '/api/v1/scim/tokens', {})).status).toBe(401);
  });
});

describe('SCIM client flow as Okta runs it', () => {
  test('connection test, lookup before create, create, deactivate with PATCH, reactivate, delete', async () => {
    // Connection test: always a ListResponse.
    const probe = await scim('GET', '/Users?startIndex=1&count=2');
    expect(probe.status).toBe(200);
    expect(probe.headers.get('content-type')).toContain(SCIM_JSON);
    expect(probe.body).toMatchObject({
      schemas: ['urn:ietf:params:scim:api:messages:2.0:ListResponse'],
      startIndex: 1,
    });
    expect(probe.body.Resources.length).toBeLessThanOrEqual(2);

    const email = uniqueEmail('okta');
    const lookup = await scim('GET', `${filter(`userName eq "${email}"`)}&startIndex=1&count=100`);
    expect(lookup.body).toMatchObject({ totalResults: 0, Resources: [] });

    const created = await scim('POST', '/Users', oktaUser(email));
    expect(created.status).toBe(201);
    expect(created.headers.get('content-type')).toContain(SCIM_JSON);
    const id = created.body.id;
    expect(created.body).toMatchObject({
      schemas: [USER],
      userName: email,
      active: true,
      name: { givenName: 'Okta', familyName: 'User' },
    });
    expect(created.body.emails).toEqual([{ value: email, type: 'work', primary: true }]);
    expect(created.body.meta).toMatchObject({
      resourceType: 'User',
      location: expect.stringMatching(new RegExp(`/scim/v2/Users/${id}$`)),
      version: expect.stringMatching(/^W\/"/),
    });
    expect(created.headers.get('location')).toBe(created.body.meta.location);
    expect(created.headers.get('etag')).toBe(created.body.meta.version);
    expect(created.body.password).toBeUndefined();
    expect(await listProvisionedApps(h.context.db, id)).toEqual(['billing', 'crm']);

    const found = await scim('GET', filter(`userName eq "${email.toUpperCase()}"`));
    expect(found.body.totalResults).toBe(1);
    expect(found.body.Resources[0].id).toBe(id);

    const deactivated = await patch(`/Users/${id}`, [{ op: 'replace', value: { active: false } }]);
    expect(deactivated.status).toBe(200);
    expect(deactivated.body.active).toBe(false);
    expect(await listProvisionedApps(h.context.db, id)).toEqual([]);
    await eventually(() => {
      expect(h.apps.crm.state.deletedUsers).toContain(id);
      expect(h.apps.billing.state.deletedUsers).toContain(id);
    });
    const stillListed = await scim('GET', filter(`userName eq "${email}"`));
    expect(stillListed.body.Resources[0]).toMatchObject({ id, active: false });

    // Entra sends the boolean as a string.
    const reactivated = await patch(`/Users/${id}`, [{ op: 'Replace', path: 'active', value: 'True' }]);
    expect(reactivated.status).toBe(200);
    expect(reactivated.body.active).toBe(true);
    expect(await listProvisionedApps(h.context.db, id)).toEqual(['billing', 'crm']);
    expect(
      h.apps.crm.state.calls.filter((c) => c.path === '/try' && (c.body as { userId?: string }).userId === id),
    ).toHaveLength(2);

    const deleted = await scim('DELETE', `/Users/${id}`);
    expect(deleted.status).toBe(204);
    const afterDelete = await scim('GET', `/Users/${id}`);
    expect(afterDelete.status).toBe(200);
    expect(afterDelete.body.active).toBe(false);
    expect(await listProvisionedApps(h.context.db, id)).toEqual([]);
  });
});

describe('SCIM /Users', () => {
  test('filters: externalId eq, emails[type eq "work"].value eq, combined with and; no match is an empty ListResponse', async () => {
    const email = uniqueEmail('filter');
    const body = oktaUser(email);
    const created = await scim('POST', '/Users', body);
    const byExternal = await scim('GET', filter(`externalId eq "${body.externalId}"`));
    expect(idsOf(byExternal)).toEqual([created.body.id]);
    const byEmail = await scim('GET', filter(`emails[type eq "work"].value eq "${email}"`));
    expect(byEmail.body.totalResults).toBe(1);
    const both = await scim('GET', filter(`userName eq "${email}" and externalId eq "${body.externalId}"`));
    expect(both.body.totalResults).toBe(1);
    const neither = await scim('GET', filter(`userName eq "${email}" and externalId eq "other"`));
    expect(neither.body).toMatchObject({ totalResults: 0, itemsPerPage: 0, Resources: [] });
  });

  test('paging: startIndex is 1-based and count limits the page', async () => {
    // Other test files create users in the same store meanwhile: page over this test's own users only.
    const emails = [0, 1, 2, 3].map((i) => uniqueEmail(`page${i}`));
    for (const email of emails) await scim('POST', '/Users', oktaUser(email));
    const ours = encodeURIComponent(emails.map((email) => `userName eq "${email}"`).join(' or '));
    const all = await scim('GET', `/Users?filter=${ours}&startIndex=1&count=1000`);
    expect(all.body.totalResults).toBe(4);
    const page = await scim('GET', `/Users?filter=${ours}&startIndex=2&count=2`);
    expect(page.body).toMatchObject({ totalResults: 4, startIndex: 2, itemsPerPage: 2 });
    expect(idsOf(page)).toEqual(all.body.Resources.slice(1, 3).map((r: { id: string }) => r.id));
  });

  test('userName is unique case-insensitively: 409 with scimType uniqueness', async () => {
    const email = uniqueEmail('unique');
    const created = await scim('POST', '/Users', oktaUser(email));
    expect(created.status).toBe(201);
    const duplicate = await scim('POST', '/Users', oktaUser(email.toUpperCase()));
    expectScimError(duplicate, 409, 'uniqueness');
    expect(duplicate.body.detail).toContain(`(id ${created.body.id})`);
  });

  test('Idempotency-Key: a repeated creation gets the same resource, location and version; another body 422', async () => {
    const body = oktaUser(uniqueEmail('scim-idem'));
    const key = { 'idempotency-key': `scim-${body.externalId}` };
    const first = await scim('POST', '/Users', body, key);
    const again = await scim('POST', '/Users', body, key);
    expect(first.status).toBe(201);
    expect(again.status).toBe(201);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    expect(again.headers.get('etag')).toBe(first.headers.get('etag'));
    expectScimError(await scim('POST', '/Users', oktaUser(uniqueEmail('scim-idem-other')), key), 422);
  });

  test('a rejection by an app answers 422 in the SCIM error schema with the reason, and the user is gone', async () => {
    h.apps.crm.state.behaviour = { rejectWith: 'crm has no licence left' };
    const email = uniqueEmail('scim-reject');
    const res = await scim('POST', '/Users', oktaUser(email));
    expectScimError(res, 422);
    expect(res.body.detail).toContain('crm has no licence left');
    expect((await scim('GET', filter(`userName eq "${email}"`))).body.totalResults).toBe(0);
  });

  test('PUT replaces the attributes; If-Match with a stale version answers 412', async () => {
    const email = uniqueEmail('put');
    const created = await scim('POST', '/Users', oktaUser(email));
    const stale = created.body.meta.version;
    const newEmail = uniqueEmail('put-new');
    const replaced = await scim('PUT', `/Users/${created.body.id}`, {
      schemas: [USER],
      userName: newEmail,
      name: { givenName: 'Renamed' },
      emails: [{ value: newEmail, primary: true }],
      active: true,
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toMatchObject({
      userName: newEmail,
      name: { givenName: 'Renamed' },
    });
    // Kept as sent: no type is invented.
    expect(replaced.body.emails).toEqual([{ value: newEmail, primary: true }]);
    expect(replaced.body.externalId).toBeUndefined();
    expect(replaced.body.password).toBeUndefined();
    expectScimError(
      await scim('PUT', `/Users/${created.body.id}`, { schemas: [USER], userName: newEmail }, { 'if-match': stale }),
      412,
    );
  });

  test('a password set through PATCH replaces the hash (policy applies; the password is never returned)', async () => {
    const created = await scim('POST', '/Users', oktaUser(uniqueEmail('pw')));
    const read = async () => ({ password_hash: await storedPasswordHash(h, created.body.id) });
    const before = (await read()).password_hash!;
    expectScimError(
      await patch(`/Users/${created.body.id}`, [{ op: 'replace', path: 'password', value: 'x' }]),
      400,
      'invalidValue',
    );
    const changed = await patch(`/Users/${created.body.id}`, [
      { op: 'replace', path: 'password', value: 'Brand-new-passphrase-1' },
    ]);
    expect(changed.status).toBe(200);
    expect(JSON.stringify(changed.body)).not.toContain('Brand-new-passphrase-1');
    const after = (await read()).password_hash!;
    expect(after).not.toBe(before);
    expect(await verifyPassword('Brand-new-passphrase-1', after)).toBe(true);
  });

  test('invalid input, an unsupported filter and an unknown id answer SCIM errors', async () => {
    expectScimError(await scim('POST', '/Users', { schemas: [USER], emails: [] }), 400, 'invalidValue');
    expectScimError(await scim('POST', '/Users', { schemas: [USER], userName: 'not-an-email' }), 400, 'invalidValue');
    expectScimError(await scim('GET', filter('userName co "a"')), 400, 'invalidFilter');
    expectScimError(await scim('GET', filter('nickName eq "a"')), 400, 'invalidFilter');
    expectScimError(await scim('GET', '/Users/does-not-exist'), 404);
    expectScimError(await patch('/Users/does-not-exist', []), 404);
    const notJson = await h.request('POST', '/scim/v2/Users', '{"userName":', {
      authorization: `Bearer ${token}`,
      'content-type': SCIM_JSON,
    });
    expectScimError(notJson, 400, 'invalidSyntax');
  });
});

describe('SCIM /Groups', () => {
  test('create, read, filter by displayName, patch members, replace and delete', async () => {
    const alice = await scim('POST', '/Users', oktaUser(uniqueEmail('g-alice')));
    const bob = await scim('POST', '/Users', oktaUser(uniqueEmail('g-bob')));
    const name = `Engineering ${Date.now()}`;
    const created = await scim('POST', '/Groups', {
      schemas: [GROUP],
      displayName: name,
      members: [{ value: alice.body.id }],
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      schemas: [GROUP],
      displayName: name,
      members: [{ value: alice.body.id, display: alice.body.userName }],
    });
    const id = created.body.id;

    expect((await scim('GET', `/Groups/${id}`)).body.displayName).toBe(name);
    const listed = await scim('GET', `/Groups?filter=${encodeURIComponent(`displayName eq "${name.toLowerCase()}"`)}`);
    expect(idsOf(listed)).toEqual([id]);

    const patched = await patch(`/Groups/${id}`, [
      { op: 'add', path: 'members', value: [{ value: bob.body.id }] },
      { op: 'remove', path: `members[value eq "${alice.body.id}"]` },
    ]);
    expect(patched.status).toBe(200);
    expect(patched.body.members.map((m: { value: string }) => m.value)).toEqual([bob.body.id]);

    const replaced = await scim('PUT', `/Groups/${id}`, {
      schemas: [GROUP],
      displayName: `${name} renamed`,
      members: [],
    });
    expect(replaced.body).toMatchObject({ displayName: `${name} renamed`, members: [] });

    expectScimError(
      await scim('POST', '/Groups', { schemas: [GROUP], displayName: `${name} RENAMED` }),
      409,
      'uniqueness',
    );
    expectScimError(
      await scim('POST', '/Groups', {
        schemas: [GROUP],
        displayName: `${name} other`,
        members: [{ value: 'no-such-user' }],
      }),
      400,
      'invalidValue',
    );

    expect((await scim('DELETE', `/Groups/${id}`)).status).toBe(204);
    expectScimError(await scim('GET', `/Groups/${id}`), 404);
  });
});

describe('SCIM as Microsoft Entra ID sends it', () => {
  test("Entra's member removal (a value list on path members, $ref null) removes those members; no value removes all", async () => {
    const [carol, dan, erin] = await Promise.all(
      ['e-carol', 'e-dan', 'e-erin'].map((label) => scim('POST', '/Users', oktaUser(uniqueEmail(label)))),
    );
    const created = await scim('POST', '/Groups', {
      schemas: [GROUP],
      displayName: `Entra ${Date.now()}`,
      members: [carol, dan, erin].map((u) => ({ value: u.body.id })),
    });
    const id = created.body.id;
    const removed = await patch(`/Groups/${id}`, [
      { op: 'Remove', path: 'members', value: [{ $ref: null, value: dan.body.id }] },
    ]);
    expect(removed.status).toBe(200);
    expect(removed.body.members.map((m: { value: string }) => m.value).sort()).toEqual(
      [carol.body.id, erin.body.id].sort(),
    );
    const all = await patch(`/Groups/${id}`, [{ op: 'remove', path: 'members' }]);
    expect(all.status).toBe(200);
    expect(all.body.members ?? []).toEqual([]);
    expectScimError(
      await patch(`/Groups/${id}`, [{ op: 'Remove', path: 'members', value: [{ display: 'no id' }] }]),
      400,
      'invalidValue',
    );
  });

  test('attributes and excludedAttributes select what GET answers carry; id and schemas always stay', async () => {
    const email = uniqueEmail('e-frank');
    const user = (await scim('POST', '/Users', oktaUser(email))).body;
    const group = (
      await scim('POST', '/Groups', {
        schemas: [GROUP],
        displayName: `Selected ${Date.now()}`,
        members: [{ value: user.id }],
      })
    ).body;

    const withoutMembers = await scim(
      'GET',
      `/Groups?excludedAttributes=members&filter=${encodeURIComponent(`displayName eq "${group.displayName}"`)}`,
    );
    expect(withoutMembers.body.Resources).toEqual([expect.not.objectContaining({ members: expect.anything() })]);
    expect(withoutMembers.body.Resources[0]).toMatchObject({ id: group.id, displayName: group.displayName });
    expect((await scim('GET', `/Groups/${group.id}?excludedAttributes=members,id`)).body).toEqual(
      expect.objectContaining({ id: group.id, schemas: [GROUP] }),
    );

    const selected = await scim('GET', `${filter(`userName eq "${email}"`)}&attributes=userName,emails.value`);
    expect(selected.body.Resources).toEqual([
      { schemas: [USER], id: user.id, userName: email, emails: [{ value: email }] },
    ]);
    const one = await scim(
      'GET',
      `/Users/${user.id}?attributes=urn:ietf:params:scim:schemas:core:2.0:User:name.givenName`,
    );
    expect(one.body).toEqual({ schemas: [USER], id: user.id, name: { givenName: 'Okta' } });
    const excluded = await scim('GET', `/Users/${user.id}?excludedAttributes=name.familyName,emails,meta`);
    expect(excluded.body.name).toEqual({ givenName: 'Okta', formatted: 'Okta User' });
    expect(excluded.body).not.toHaveProperty('emails');
    expect(excluded.body).not.toHaveProperty('meta');
  });

  test('search over POST: /Users/.search and /Groups/.search take the list query as a body; the root answers 501', async () => {
    const email = uniqueEmail('e-grace');
    const user = (await scim('POST', '/Users', oktaUser(email))).body;
    const found = await scim('POST', '/Users/.search', {
      schemas: ['urn:ietf:params:scim:api:messages:2.0:SearchRequest'],
      filter: `userName eq "${email}"`,
      attributes: ['userName'],
      startIndex: 1,
      count: 10,
    });
    expect(found.status).toBe(200);
    expect(found.body).toMatchObject({
      totalResults: 1,
      Resources: [{ schemas: [USER], id: user.id, userName: email }],
    });
    expect(found.body.Resources[0]).not.toHaveProperty('emails');
    const groups = await scim('POST', '/Groups/.search', { filter: 'displayName eq "no such group"' });
    expect(groups.body).toMatchObject({ totalResults: 0 });
    expectScimError(await scim('POST', '/Users/.search', { filter: 7 }), 400, 'invalidValue');
    expectScimError(await scim('POST', '/.search', { filter: `userName eq "${email}"` }), 501);
  });

  test('a user without any e-mail answers 400 saying what to send, as /Schemas says emails are required', async () => {
    const schema = await scim('GET', `/Schemas/${encodeURIComponent(USER)}`);
    const emails = schema.body.attributes.find((a: { name: string }) => a.name === 'emails');
    expect(emails).toMatchObject({ required: true, multiValued: true });
    const refused = await scim('POST', '/Users', { schemas: [USER], userName: `no-mail-${Date.now()}` });
    expectScimError(refused, 400, 'invalidValue');
    expect(refused.body.detail).toBe(
      "emails: send at least one e-mail address (emails[].value), or a userName that is one; every downstream app receives the user's e-mail",
    );
  });

  // Robustness issue, item 15: generic testers build requests from /Schemas, so it must say what the service does.
  test('/Schemas is truthful: emails[].value is required, and a group member declares every attribute an answer carries', async () => {
    const user = await scim('GET', `/Schemas/${encodeURIComponent(USER)}`);
    const emails = user.body.attributes.find((a: { name: string }) => a.name === 'emails');
    expect(emails.subAttributes.find((a: { name: string }) => a.name === 'value')).toMatchObject({ required: true });

    const member = (await scim('POST', '/Users', oktaUser(uniqueEmail('schema-member')))).body;
    const group = await scim('POST', '/Groups', {
      schemas: [GROUP],
      displayName: `schema-group-${Date.now()}`,
      members: [{ value: member.id }],
    });
    expect(group.status).toBe(201);
    const answered = Object.keys(group.body.members[0]).sort();
    const schema = await scim('GET', `/Schemas/${encodeURIComponent(GROUP)}`);
    const declared = schema.body.attributes
      .find((a: { name: string }) => a.name === 'members')
      .subAttributes.map((a: { name: string }) => a.name);
    for (const name of answered) expect(declared).toContain(name);
  });

  test("PATCH remove whose path is the enterprise extension's URN removes the whole extension", async () => {
    const user = (
      await scim(
        'POST',
        '/Users',
        oktaUser(uniqueEmail('e-extension'), { schemas: [USER, ENTERPRISE], [ENTERPRISE]: { department: 'Sales' } }),
      )
    ).body;
    expect(user[ENTERPRISE]).toEqual({ department: 'Sales' });
    const removed = await patch(`/Users/${user.id}`, [{ op: 'Remove', path: ENTERPRISE.toLowerCase() }]);
    expect(removed.status).toBe(200);
    expect(removed.body).not.toHaveProperty(ENTERPRISE);
    expect((await scim('GET', `/Users/${user.id}`)).body).not.toHaveProperty(ENTERPRISE);
  });

  test('PATCH remove: a removed name is absent afterwards; active and emails cannot be removed and say so', async () => {
    const user = (await scim('POST', '/Users', oktaUser(uniqueEmail('e-heidi')))).body;
    const remove = (path: string) => patch(`/Users/${user.id}`, [{ op: 'remove', path }]);
    const nameless = await remove('name');
    expect(nameless.status).toBe(200);
    expect(nameless.body).not.toHaveProperty('name');
    expect((await scim('GET', `/Users/${user.id}`)).body).not.toHaveProperty('name');
    const active = await remove('active');
    expectScimError(active, 400, 'invalidValue');
    expect(active.body.detail).toMatch(/^active: cannot be removed/);
    const emails = await remove('emails');
    expectScimError(emails, 400, 'invalidValue');
    expect(emails.body.detail).toMatch(/^emails: cannot be removed/);
    expect((await scim('GET', `/Users/${user.id}`)).body).toMatchObject({
      active: true,
      emails: [{ value: user.userName }],
    });
  });

  test('an Entra-shaped sequence with the enterprise extension: filter, create, PATCH Replace, members, excludedAttributes, disable with "False", delete', async () => {
    const manager = (await scim('POST', '/Users', oktaUser(uniqueEmail('e-boss')))).body;
    const nextManager = (await scim('POST', '/Users', oktaUser(uniqueEmail('e-boss2')))).body;
    const email = uniqueEmail('e-ivan');
    expect((await scim('GET', filter(`userName eq "${email}"`))).body.totalResults).toBe(0);
    const created = await scim('POST', '/Users', {
      schemas: [USER, ENTERPRISE],
      externalId: `entra-${Date.now()}`,
      userName: email,
      active: true,
      displayName: 'Ivan Entra',
      emails: [{ primary: true, type: 'work', value: email }],
      name: { givenName: 'Ivan', familyName: 'Entra' },
      [ENTERPRISE]: { employeeNumber: 'E-100', department: 'Sales', manager: { value: manager.id } },
    });
    expect(created.status).toBe(201);
    const id = created.body.id;
    expect(created.body.schemas).toEqual([USER, ENTERPRISE]);
    expect(created.body[ENTERPRISE]).toEqual({
      employeeNumber: 'E-100',
      department: 'Sales',
      manager: { value: manager.id, $ref: expect.stringMatching(new RegExp(`/Users/${manager.id}$`)) },
    });
    // Downstream apps get the extension as custom attributes under their plain names.
    const [tried] = h.apps.crm.state.calls.filter(
      (c) => c.path === '/try' && (c.body as { userId?: string }).userId === id,
    );
    expect((tried.body as { customAttributes: unknown }).customAttributes).toEqual({
      employeeNumber: 'E-100',
      department: 'Sales',
      manager: manager.id,
    });
    const byNumber = await scim('GET', filter(`${ENTERPRISE}:employeeNumber eq "E-100"`));
    expect(idsOf(byNumber)).toEqual([id]);

    const patched = await patch(`/Users/${id}`, [
      { op: 'Replace', path: `${ENTERPRISE}:department`, value: 'Marketing' },
      { op: 'Add', path: `${ENTERPRISE}:manager`, value: nextManager.id },
      { op: 'Replace', path: 'displayName', value: 'Ivan E.' },
    ]);
    expect(patched.status).toBe(200);
    expect(patched.body[ENTERPRISE]).toMatchObject({
      employeeNumber: 'E-100',
      department: 'Marketing',
      manager: { value: nextManager.id },
    });

    const group = (await scim('POST', '/Groups', { schemas: [GROUP], displayName: `Entra seq ${Date.now()}` })).body;
    const member = (op: string) =>
      patch(`/Groups/${group.id}`, [{ op, path: 'members', value: [{ $ref: null, value: id }] }]);
    expect((await member('Add')).body.members.map((m: { value: string }) => m.value)).toEqual([id]);
    expect((await scim('GET', `/Groups/${group.id}?excludedAttributes=members`)).body).not.toHaveProperty('members');
    expect((await member('Remove')).body.members ?? []).toEqual([]);

    const disabled = await patch(`/Users/${id}`, [{ op: 'Replace', path: 'active', value: 'False' }]);
    expect(disabled.body.active).toBe(false);
    expect((await scim('DELETE', `/Users/${id}`)).status).toBe(204);
    // The spec's soft-delete: still there, inactive.
    expect((await scim('GET', `/Users/${id}`)).body).toMatchObject({ id, active: false });
  });

  test('/Schemas and the User resource type advertise the enterprise extension', async () => {
    const schema = await scim('GET', `/Schemas/${encodeURIComponent(ENTERPRISE)}`);
    expect(schema.status).toBe(200);
    const advertised = ['employeeNumber', 'costCenter', 'organization', 'division', 'department', 'manager'];
    expect(schema.body.attributes.map((a: { name: string }) => a.name)).toEqual(advertised);
    expect((await scim('GET', '/ResourceTypes/User')).body.schemaExtensions).toEqual([
      { schema: ENTERPRISE, required: false },
    ]);
  });

  test('multi-valued e-mails are kept with their type and primary as sent; the primary one signs in; two primaries are refused', async () => {
    const work = uniqueEmail('e-judy');
    const home = uniqueEmail('e-judy-home');
    const user = (await scim('POST', '/Users', oktaUser(work))).body;
    const added = await patch(`/Users/${user.id}`, [
      { op: 'add', path: 'emails', value: [{ value: home, type: 'home' }] },
    ]);
    expect(added.status).toBe(200);
    expect(added.body.emails).toEqual([
      { value: work, type: 'work', primary: true },
      { value: home, type: 'home' },
    ]);
    expect(idsOf(await scim('GET', filter(`emails.value eq "${home}"`)))).toEqual([user.id]);
    expect((await scim('GET', filter(`emails[type eq "home" and value eq "${home}"]`))).body.totalResults).toBe(1);

    // The home address becomes primary: it is now the user's e-mail, the work one stays as sent.
    const replaced = await patch(`/Users/${user.id}`, [
      {
        op: 'replace',
        path: 'emails',
        value: [
          { value: work, type: 'work', primary: false },
          { value: home, type: 'home', primary: true },
        ],
      },
    ]);
    expect(replaced.body.emails).toEqual([
      { value: work, type: 'work' },
      { value: home, type: 'home', primary: true },
    ]);
    const profile = await h.admin('GET', `/api/v1/profile/${user.id}`);
    expect(profile.body.email).toBe(home);

    const replaceEmails = (emails: object[]) =>
      scim('PUT', `/Users/${user.id}`, { schemas: [USER], userName: work, emails });
    const twoPrimaries = [
      { value: work, primary: true },
      { value: home, primary: true },
    ];
    expectScimError(await replaceEmails(twoPrimaries), 400, 'invalidValue');
    expectScimError(await replaceEmails([{ value: 'not an address' }]), 400, 'invalidValue');
  });

  test("the ServiceProviderConfig's documentationUri is a public page that explains the soft delete", async () => {
    const config = await scim('GET', '/ServiceProviderConfig');
    expect(config.body.documentationUri).toBe(`${h.api.publicUrl}/docs/scim`);
    const page = await fetch(config.body.documentationUri);
    expect(page.status).toBe(200);
    const text = (await page.text()).replace(/<[^>]+>/g, '');
    expect(text).toContain('DELETE is a soft delete.');
    expect(text).toContain('still answers 200 with active: false');
  });

  test('the discovery endpoints answer 405 with Allow: GET to other methods, in the SCIM error schema', async () => {
    for (const [method, path] of [
      ['POST', '/ServiceProviderConfig'],
      ['PUT', '/ResourceTypes/User'],
      ['PATCH', '/Schemas'],
      ['DELETE', `/Schemas/${encodeURIComponent(USER)}`],
    ]) {
      const answer = await scim(method, path, method === 'DELETE' ? undefined : {});
      expectScimError(answer, 405);
      expect(answer.headers.get('allow')).toBe('GET');
    }
    expectScimError(await scim('GET', '/Schemas/urn:nothing'), 404);
  });
});

describe('SCIM discovery', () => {
  test('ServiceProviderConfig, ResourceTypes and Schemas describe what is supported', async () => {
    const config = await scim('GET', '/ServiceProviderConfig');
    expect(config.body).toMatchObject({
      patch: { supported: true },
      filter: { supported: true },
      bulk: { supported: false },
      etag: { supported: true },
    });
    const types = await scim('GET', '/ResourceTypes');
    expect(idsOf(types)).toEqual(['User', 'Group']);
    const schemas = await scim('GET', '/Schemas');
    expect(idsOf(schemas)).toEqual([USER, ENTERPRISE, GROUP]);
    expect((await scim('GET', `/Schemas/${USER}`)).body.attributes.map((a: { name: string }) => a.name)).toContain(
      'userName',
    );
  });
});
