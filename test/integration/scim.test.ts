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
    expectScimError(await scim('GET', `/Users/${id}`), 404);
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
      members: [{ value: alice.body.id }],
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
    expect(excluded.body.name).toEqual({ givenName: 'Okta' });
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
      manager: { value: manager.id },
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
    // RFC 7644 §3.6: gone for SCIM; the record stays, inactive, for the admin API.
    expectScimError(await scim('GET', `/Users/${id}`), 404);
    expect((await h.admin('GET', `/api/v1/profile/${id}`)).body).toMatchObject({ userId: id, active: false });
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
      { value: work, type: 'work', primary: false },
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

  test("the ServiceProviderConfig's documentationUri is a public page that explains what DELETE does", async () => {
    const config = await scim('GET', '/ServiceProviderConfig');
    expect(config.body.documentationUri).toBe(`${h.api.publicUrl}/docs/scim`);
    const page = await fetch(config.body.documentationUri);
    expect(page.status).toBe(200);
    const text = (await page.text()).replace(/<[^>]+>/g, '');
    expect(text).toContain('DELETE removes the SCIM resource, not the record.');
    expect(text).toContain('afterwards the user answers 404');
    expect(text).toContain('DELETE /api/v1/profile/{id}');
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

/** The attributes /Schemas publishes for a schema, as `attr` and `attr.sub` (sub-attributes of complex ones). */
async function publishedNames(schemaId: string): Promise<string[]> {
  const schema = (await scim('GET', `/Schemas/${encodeURIComponent(schemaId)}`)).body;
  return schema.attributes.flatMap((a: { name: string; subAttributes?: Array<{ name: string }> }) => [
    a.name,
    ...(a.subAttributes ?? []).map((s) => `${a.name}.${s.name}`),
  ]);
}

/** A PATCH whose answer and a later GET must both show `expected` (a check of the resource). */
async function patchAndRead(path: string, operations: object[], check: (resource: any) => void) {
  const answer = await patch(path, operations);
  expect({ status: answer.status, detail: answer.body.detail }).toEqual({ status: 200, detail: undefined });
  check(answer.body);
  check((await scim('GET', path)).body);
  return answer.body;
}

describe('SCIM as RFC 7643/7644 read by a generic checker (issue 38)', () => {
  // Item 13: every sub-attribute of name is kept as sent, untrimmed; formatted is the client's, never made up.
  test('PATCH add/replace of name keeps all six sub-attributes as sent; formatted is never recomputed', async () => {
    const created = await scim('POST', '/Users', oktaUser(uniqueEmail('name-six')));
    expect(created.body.name).toEqual({ givenName: 'Okta', familyName: 'User' });
    const name = {
      formatted: 'Ms. Barbara J Jensen, III',
      familyName: 'Jensen',
      givenName: ' Barbara ',
      middleName: 'Jane',
      honorificPrefix: 'Ms.',
      honorificSuffix: 'III',
    };
    const path = `/Users/${created.body.id}`;
    await patchAndRead(path, [{ op: 'replace', path: 'name', value: name }], (r) => expect(r.name).toEqual(name));
    await patchAndRead(path, [{ op: 'add', path: 'name.middleName', value: 'J.' }], (r) =>
      expect(r.name).toEqual({ ...name, middleName: 'J.' }),
    );
    await patchAndRead(path, [{ op: 'replace', path: 'name.formatted', value: 'B. Jensen' }], (r) =>
      expect(r.name).toEqual({ ...name, middleName: 'J.', formatted: 'B. Jensen' }),
    );
    // A filter on givenName finds the value as it was sent.
    expect(idsOf(await scim('GET', filter('name.givenName eq " Barbara "')))).toContain(created.body.id);
  });

  test('POST and PUT keep name, the manager and externalId as sent too', async () => {
    const email = uniqueEmail('put-as-sent');
    const name = { givenName: 'Ada', middleName: 'K', familyName: 'Lovelace', honorificSuffix: 'Countess' };
    const manager = { value: 'boss', displayName: 'The Boss' };
    const body = {
      schemas: [USER, ENTERPRISE],
      userName: email,
      externalId: ' x-1',
      name,
      emails: [{ value: email, type: 'work', primary: true }],
      [ENTERPRISE]: { manager },
    };
    const created = await scim('POST', '/Users', body);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ externalId: ' x-1', name, [ENTERPRISE]: { manager } });
    expect(created.body.name).toEqual(name);
    const replaced = await scim('PUT', `/Users/${created.body.id}`, {
      ...body,
      name: { formatted: 'A. Lovelace' },
      [ENTERPRISE]: { manager: { value: 'boss-2', $ref: '../Users/boss-2' } },
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body.name).toEqual({ formatted: 'A. Lovelace' });
    expect(replaced.body[ENTERPRISE]).toEqual({ manager: { value: 'boss-2', $ref: '../Users/boss-2' } });
    expect((await scim('GET', `/Users/${created.body.id}`)).body.name).toEqual({ formatted: 'A. Lovelace' });
  });

  // Item 14: the extension object by its URN, as a path or as a key of a value without a path.
  test('PATCH of the enterprise extension by its URN path or URN key is kept; remove of the URN removes it', async () => {
    const user = (await scim('POST', '/Users', oktaUser(uniqueEmail('urn-ext')))).body;
    const path = `/Users/${user.id}`;
    await patchAndRead(path, [{ op: 'add', path: `${ENTERPRISE}:department`, value: 'RB' }], (r) =>
      expect(r[ENTERPRISE]).toEqual({ department: 'RB' }),
    );
    await patchAndRead(path, [{ op: 'remove', path: ENTERPRISE }], (r) => {
      expect(r).not.toHaveProperty(ENTERPRISE);
      expect(r.schemas).toEqual([USER]);
    });
    const manager = { value: 'm-1', displayName: 'Mary Manager', $ref: '../Users/m-1' };
    await patchAndRead(path, [{ op: 'add', path: ENTERPRISE, value: { costCenter: 'CC-1', manager } }], (r) =>
      expect(r[ENTERPRISE]).toEqual({ costCenter: 'CC-1', manager }),
    );
    await patchAndRead(path, [{ op: 'replace', value: { [ENTERPRISE]: { division: 'North' } } }], (r) =>
      expect(r[ENTERPRISE]).toEqual({ costCenter: 'CC-1', division: 'North', manager }),
    );
    await patchAndRead(path, [{ op: 'replace', path: `${ENTERPRISE}:manager.displayName`, value: 'M. M.' }], (r) =>
      expect(r[ENTERPRISE].manager).toEqual({ ...manager, displayName: 'M. M.' }),
    );
    // Entra names a new manager by its id alone: nothing of the previous one stays.
    await patchAndRead(path, [{ op: 'Replace', path: `${ENTERPRISE}:manager`, value: 'm-2' }], (r) =>
      expect(r[ENTERPRISE].manager).toEqual({ value: 'm-2' }),
    );
  });

  // Item 15: members as stored, in order; groups as members are refused as /Schemas says.
  test('group members are answered as sent (value, display, type, $ref) in their order; a Group member is refused', async () => {
    const [a, b] = await Promise.all(
      ['m-a', 'm-b'].map(async (label) => (await scim('POST', '/Users', oktaUser(uniqueEmail(label)))).body),
    );
    const members = [
      { value: b.id, display: 'Bee', type: 'User', $ref: `${h.api.publicUrl}/scim/v2/Users/${b.id}` },
      { value: a.id },
    ];
    const created = await scim('POST', '/Groups', { schemas: [GROUP], displayName: `Ordered ${Date.now()}`, members });
    expect(created.status).toBe(201);
    expect(created.body.members).toEqual(members);
    expect((await scim('GET', `/Groups/${created.body.id}`)).body.members).toEqual(members);
    const added = { value: a.id === members[1].value ? b.id : a.id };
    await patchAndRead(`/Groups/${created.body.id}`, [{ op: 'add', path: 'members', value: [added] }], (r) =>
      expect(r.members).toEqual(members),
    );

    const schema = await scim('GET', `/Schemas/${encodeURIComponent(GROUP)}`);
    const declared = schema.body.attributes.find((x: { name: string }) => x.name === 'members').subAttributes;
    expect(declared.map((s: { name: string }) => s.name).sort()).toEqual(['$ref', 'display', 'type', 'value']);
    expect(declared.find((s: { name: string }) => s.name === 'type').canonicalValues).toEqual(['User']);
    const nested = await scim('POST', '/Groups', {
      schemas: [GROUP],
      displayName: `Nested ${Date.now()}`,
      members: [{ value: created.body.id, type: 'Group' }],
    });
    expectScimError(nested, 400, 'invalidValue');
    expect(nested.body.detail).toBe(
      'members[0].type: only users are members of a group here (type User; see /Schemas)',
    );
    const wrongRef = await scim('POST', '/Groups', {
      schemas: [GROUP],
      displayName: `Wrong ref ${Date.now()}`,
      members: [{ value: a.id, $ref: `${h.api.publicUrl}/scim/v2/Users/${b.id}` }],
    });
    expectScimError(wrongRef, 400, 'invalidValue');
  });

  // Item 16: RFC 7644 §3.6 — after DELETE the resource is gone for SCIM, the record stays for audit and the admin API.
  test('after DELETE a user answers 404 to GET, PUT, PATCH and DELETE, is left out of filters and groups, and its userName is refused with a way out', async () => {
    const email = uniqueEmail('deleted');
    const user = (await scim('POST', '/Users', oktaUser(email))).body;
    const group = (
      await scim('POST', '/Groups', {
        schemas: [GROUP],
        displayName: `Del ${Date.now()}`,
        members: [{ value: user.id }],
      })
    ).body;
    expect((await scim('DELETE', `/Users/${user.id}`)).status).toBe(204);
    expectScimError(await scim('GET', `/Users/${user.id}`), 404);
    expectScimError(await patch(`/Users/${user.id}`, [{ op: 'replace', path: 'active', value: true }]), 404);
    expectScimError(await scim('PUT', `/Users/${user.id}`, oktaUser(email)), 404);
    expectScimError(await scim('DELETE', `/Users/${user.id}`), 404);
    expect((await scim('GET', filter(`userName eq "${email}"`))).body).toMatchObject({ totalResults: 0 });
    expect((await scim('GET', filter(`id eq "${user.id}"`))).body).toMatchObject({ totalResults: 0 });
    expect((await scim('GET', `/Groups/${group.id}`)).body.members ?? []).toEqual([]);
    expectScimError(
      await patch(`/Groups/${group.id}`, [{ op: 'add', path: 'members', value: [{ value: user.id }] }]),
      400,
      'invalidValue',
    );
    // The record stays, deactivated and deprovisioned, for audit and the admin API.
    const profile = await h.admin('GET', `/api/v1/profile/${user.id}`);
    expect(profile.status).toBe(200);
    expect(profile.body.active).toBe(false);
    expect(await listProvisionedApps(h.context.db, user.id)).toEqual([]);
    const again = await scim('POST', '/Users', oktaUser(email));
    expectScimError(again, 409, 'uniqueness');
    expect(again.body.detail).toContain(`DELETE /api/v1/profile/${user.id}`);
    // So is another user renamed to it.
    const other = (await scim('POST', '/Users', oktaUser(uniqueEmail('deleted-other')))).body;
    const renamed = await patch(`/Users/${other.id}`, [{ op: 'replace', path: 'userName', value: email }]);
    expectScimError(renamed, 409, 'uniqueness');
    expect(renamed.body.detail).toContain(`DELETE /api/v1/profile/${user.id}`);
  });

  test('two parallel DELETEs of one user: one 204, the other 404', async () => {
    for (let trial = 0; trial < 4; trial++) {
      const user = (await scim('POST', '/Users', oktaUser(uniqueEmail(`del-race${trial}`)))).body;
      const answers = await Promise.all([0, 1].map(() => scim('DELETE', `/Users/${user.id}`)));
      expect(answers.map((a) => a.status).sort()).toEqual([204, 404]);
    }
  });

  // Item 17: paths that name nothing, read-only attributes, op spelling, and errors in SCIM's words.
  test('PATCH paths that name nothing are invalidPath, read-only attributes are mutability, op is case-insensitive', async () => {
    const user = (await scim('POST', '/Users', oktaUser(uniqueEmail('paths')))).body;
    const path = `/Users/${user.id}`;
    for (const bad of ['a.b.c', 'urn:bogus:ext:x', ' ', 'userName.x', 'emails[type eq "work"].nothing'])
      expectScimError(await patch(path, [{ op: 'replace', path: bad, value: 'x' }]), 400, 'invalidPath');
    expectScimError(await patch(path, [{ op: 'add', value: { 'a.b.c': 'x' } }]), 400, 'invalidPath');
    for (const [target, value] of [
      ['id', 'other'],
      ['schemas', [USER, 'urn:x']],
      ['meta.created', '2020-01-01T00:00:00Z'],
    ])
      expectScimError(await patch(path, [{ op: 'replace', path: target, value }]), 400, 'mutability');
    expectScimError(await patch(path, [{ op: 'replace', value: { id: 'other' } }]), 400, 'mutability');
    expectScimError(await patch(path, [{ op: 'move', path: 'active', value: false }]), 400, 'invalidSyntax');
    expectScimError(
      await patch(path, [{ op: 'replace', path: 'emails[type eq "home"].primary', value: true }]),
      400,
      'noTarget',
    );
    const emptyPath = await patch(path, [{ op: 'replace', path: '', value: 'x' }]);
    expect(emptyPath.status).toBe(400);
    const raw = await patch(path, [{ op: 'add', path: 'name', value: 'plain' }]);
    expectScimError(raw, 400, 'invalidValue');
    expect(raw.body.detail).toBe(
      'Operations[0].value: name is complex: send an object of its sub-attributes (see /Schemas)',
    );
    expect((await patch(path, [{ op: 'add', path: 'a.b.c', value: 'x' }])).body.detail).toBe(
      'Operations[0].path: "a.b.c" is not an attribute path (attribute[filter].subAttribute)',
    );
    expect((await patch(path, [{ op: 'add', path: 'bogus', value: 'x' }])).body.detail).toBe(
      'Operations[0].path: "bogus" names no attribute of a User (see /Schemas)',
    );
    const unparsed = await scim('GET', filter('userName eq'));
    expectScimError(unparsed, 400, 'invalidFilter');
    expect(unparsed.body.detail).not.toMatch(/EOT|token|json/);
    const badValueFilter = await patch(path, [{ op: 'remove', path: 'emails[type eq]' }]);
    expectScimError(badValueFilter, 400, 'invalidFilter');
    expect(badValueFilter.body.detail).not.toMatch(/EOT|token|json/);
    const upper = await patch(path, [{ op: 'REPLACE', path: 'active', value: false }]);
    expect(upper.status).toBe(200);
    expect(upper.body.active).toBe(false);
    // The same id or schemas again is no change, as Okta sends them; schemas follow from the attributes held.
    expect((await patch(path, [{ op: 'replace', value: { id: user.id, schemas: [USER] } }])).status).toBe(200);
    expect((await patch(path, [{ op: 'replace', value: { schemas: [USER, ENTERPRISE] } }])).status).toBe(200);
    // RFC 7643 §2.5: null is unassigned.
    await patchAndRead(path, [{ op: 'replace', path: 'name', value: null }], (r) =>
      expect(r).not.toHaveProperty('name'),
    );
  });

  test('odd PATCH operations answer 200 or a SCIM 400 in its own words, never a 500 or a JavaScript message', async () => {
    const user = (await scim('POST', '/Users', oktaUser(uniqueEmail('odd')))).body;
    const group = (await scim('POST', '/Groups', { schemas: [GROUP], displayName: `Odd ${Date.now()}` })).body;
    const operations: object[] = [
      { op: 'replace', path: 'userName', value: [1, 2] },
      { op: 'add', path: 'emails', value: 'not-an-object' },
      { op: 'add', path: 'emails', value: [[{ value: 'x@example.test' }]] },
      { op: 'replace', path: 'emails[value eq "nobody"]', value: 'y' },
      { op: 'remove', path: 'emails[type eq "work"]' },
      { op: 'replace', path: 'emails[', value: 1 },
      { op: 'replace', path: 'emails[type pr]', value: [] },
      { op: 'add', path: 'name.givenName', value: { nested: true } },
      { op: 'add', path: 'active', value: 'maybe' },
      { op: 'add', value: [] },
      { op: 'add', value: 'x' },
      { op: 'remove' },
      { op: 7, path: 'active' },
      { op: 'add', path: 7, value: 1 },
      { op: 'add', path: 'meta', value: {} },
      { op: 'add', path: `${ENTERPRISE}:manager`, value: 5 },
      { op: 'add', path: `${ENTERPRISE}`, value: 'x' },
      { op: 'replace', path: `${ENTERPRISE}:manager.bogus`, value: 'x' },
      { op: 'add', path: 'members', value: [{ value: user.id }] },
    ];
    for (const operation of operations) {
      for (const target of [`/Users/${user.id}`, `/Groups/${group.id}`]) {
        const answer = await patch(target, [operation]);
        if (answer.status === 200) continue;
        expectScimError(answer, 400);
        expect(answer.body.detail).not.toMatch(/Cannot |undefined|is not a function|\[object|TypeError/);
      }
    }
  });

  test('validation problems name a path parameter by its name, not (body)', async () => {
    const answer = await h.admin('GET', `/api/v1/profile/${'x'.repeat(300)}`);
    expect(answer.status).toBe(400);
    expect(answer.body.detail).toMatch(/^userId: /);
  });

  test('PATCH add, replace and remove of every attribute /Schemas publishes: the answer and a later GET show what was sent', async () => {
    const covered = new Set<string>();
    const email = uniqueEmail('every');
    const user = (await scim('POST', '/Users', oktaUser(email))).body;
    const path = `/Users/${user.id}`;
    const ok = (name: string, operations: object[], check: (r: any) => void) => {
      covered.add(name);
      return patchAndRead(path, operations, check);
    };
    const refused = async (name: string, operation: object, scimType: string) => {
      covered.add(name);
      expectScimError(await patch(path, [operation]), 400, scimType);
    };
    const userName = `every-${Date.now()}`;
    await ok('userName', [{ op: 'add', path: 'userName', value: userName }], (r) => expect(r.userName).toBe(userName));
    await ok('userName', [{ op: 'replace', path: 'userName', value: `${userName}-2` }], (r) =>
      expect(r.userName).toBe(`${userName}-2`),
    );
    await refused('userName', { op: 'remove', path: 'userName' }, 'invalidValue');
    // Kept as sent or refused: a unique name with a space around it is refused, not trimmed.
    await refused('userName', { op: 'replace', path: 'userName', value: ` ${userName}` }, 'invalidValue');
    await ok('externalId', [{ op: 'add', path: 'externalId', value: ' Ext 1 ' }], (r) =>
      expect(r.externalId).toBe(' Ext 1 '),
    );
    await ok('externalId', [{ op: 'replace', path: 'externalId', value: 'Ext-2' }], (r) =>
      expect(r.externalId).toBe('Ext-2'),
    );
    await ok('externalId', [{ op: 'remove', path: 'externalId' }], (r) => expect(r).not.toHaveProperty('externalId'));
    const subs = ['formatted', 'familyName', 'givenName', 'middleName', 'honorificPrefix', 'honorificSuffix'];
    for (const sub of subs) {
      let expected: Record<string, string> = {};
      await ok(`name.${sub}`, [{ op: 'add', path: `name.${sub}`, value: `${sub} 1` }], (r) => {
        expected = { ...r.name };
        expect(r.name[sub]).toBe(`${sub} 1`);
      });
      await ok(`name.${sub}`, [{ op: 'replace', path: `name.${sub}`, value: `${sub} 2` }], (r) =>
        expect(r.name).toEqual({ ...expected, [sub]: `${sub} 2` }),
      );
      await ok(`name.${sub}`, [{ op: 'remove', path: `name.${sub}` }], (r) =>
        expect(r.name ?? {}).not.toHaveProperty(sub),
      );
    }
    await ok('name', [{ op: 'add', path: 'name', value: { givenName: 'A', familyName: 'B' } }], (r) =>
      expect(r.name).toEqual({ givenName: 'A', familyName: 'B' }),
    );
    await ok('name', [{ op: 'replace', path: 'name', value: { middleName: 'M' } }], (r) =>
      expect(r.name).toEqual({ givenName: 'A', familyName: 'B', middleName: 'M' }),
    );
    await ok('name', [{ op: 'remove', path: 'name' }], (r) => expect(r).not.toHaveProperty('name'));

    const home = uniqueEmail('every-home');
    const work = { value: email, type: 'work', primary: true };
    await ok('emails', [{ op: 'add', path: 'emails', value: [{ value: home, type: 'home' }] }], (r) =>
      expect(r.emails).toEqual([work, { value: home, type: 'home' }]),
    );
    await ok(
      'emails.value',
      [{ op: 'replace', path: `emails[value eq "${home}"].value`, value: home.toUpperCase() }],
      (r) => expect(r.emails).toEqual([work, { value: home.toUpperCase(), type: 'home' }]),
    );
    await ok('emails.type', [{ op: 'replace', path: 'emails[type eq "home"].type', value: 'other' }], (r) =>
      expect(r.emails).toEqual([work, { value: home.toUpperCase(), type: 'other' }]),
    );
    await ok('emails.type', [{ op: 'remove', path: 'emails[type eq "other"].type' }], (r) =>
      expect(r.emails).toEqual([work, { value: home.toUpperCase() }]),
    );
    await ok(
      'emails.primary',
      [{ op: 'add', path: `emails[value eq "${home.toUpperCase()}"].primary`, value: false }],
      (r) => expect(r.emails).toEqual([work, { value: home.toUpperCase(), primary: false }]),
    );
    await ok('emails', [{ op: 'remove', path: `emails[value eq "${home.toUpperCase()}"]` }], (r) =>
      expect(r.emails).toEqual([work]),
    );
    await ok('emails', [{ op: 'replace', path: 'emails', value: [{ value: email, primary: true }] }], (r) =>
      expect(r.emails).toEqual([{ value: email, primary: true }]),
    );
    await refused('emails', { op: 'remove', path: 'emails' }, 'invalidValue');
    await ok('active', [{ op: 'replace', path: 'active', value: false }], (r) => expect(r.active).toBe(false));
    await ok('active', [{ op: 'add', path: 'active', value: true }], (r) => expect(r.active).toBe(true));
    await refused('active', { op: 'remove', path: 'active' }, 'invalidValue');
    await ok('password', [{ op: 'add', path: 'password', value: 'Every-passphrase-1' }], (r) =>
      expect(r).not.toHaveProperty('password'),
    );
    await ok('password', [{ op: 'replace', path: 'password', value: 'Every-passphrase-2' }], (r) =>
      expect(r).not.toHaveProperty('password'),
    );
    await refused('password', { op: 'remove', path: 'password' }, 'mutability');

    const ext = (name: string) => `${ENTERPRISE}:${name}`;
    for (const name of ['employeeNumber', 'costCenter', 'organization', 'division', 'department']) {
      await ok(name, [{ op: 'add', path: ext(name), value: ` ${name} 1` }], (r) =>
        expect(r[ENTERPRISE]).toEqual({ [name]: ` ${name} 1` }),
      );
      await ok(name, [{ op: 'replace', path: ext(name), value: `${name} 2` }], (r) =>
        expect(r[ENTERPRISE]).toEqual({ [name]: `${name} 2` }),
      );
      await ok(name, [{ op: 'remove', path: ext(name) }], (r) => expect(r).not.toHaveProperty(ENTERPRISE));
    }
    const manager = { value: 'boss-1', $ref: 'https://example.test/Users/boss-1', displayName: 'Boss' };
    await ok('manager', [{ op: 'add', path: ext('manager'), value: manager }], (r) =>
      expect(r[ENTERPRISE]).toEqual({ manager }),
    );
    for (const sub of ['value', '$ref', 'displayName'] as const) {
      await ok(`manager.${sub}`, [{ op: 'replace', path: ext(`manager.${sub}`), value: `${manager[sub]}-2` }], (r) =>
        expect(r[ENTERPRISE].manager[sub]).toBe(`${manager[sub]}-2`),
      );
    }
    for (const sub of ['displayName', '$ref'] as const) {
      await ok(`manager.${sub}`, [{ op: 'remove', path: ext(`manager.${sub}`) }], (r) =>
        expect(r[ENTERPRISE].manager).not.toHaveProperty(sub),
      );
      await ok(`manager.${sub}`, [{ op: 'add', path: ext(`manager.${sub}`), value: manager[sub] }], (r) =>
        expect(r[ENTERPRISE].manager[sub]).toBe(manager[sub]),
      );
    }
    // A manager is its value: one left with only a $ref or a displayName is refused.
    await refused('manager.value', { op: 'remove', path: ext('manager.value') }, 'invalidValue');
    await ok('manager', [{ op: 'replace', path: ext('manager'), value: { value: 'boss-3' } }], (r) =>
      expect(r[ENTERPRISE]).toEqual({ manager: { ...manager, value: 'boss-3' } }),
    );
    await ok('manager', [{ op: 'remove', path: ext('manager') }], (r) => expect(r).not.toHaveProperty(ENTERPRISE));

    const groupPath = `/Groups/${(await scim('POST', '/Groups', { schemas: [GROUP], displayName: `Every ${Date.now()}` })).body.id}`;
    const onGroup = async (name: string, operation: object, check: (r: any) => void) => {
      covered.add(name);
      await patchAndRead(groupPath, [operation], check);
    };
    const groupName = `Every group ${Date.now()}`;
    await onGroup('displayName', { op: 'add', path: 'displayName', value: groupName }, (r) =>
      expect(r.displayName).toBe(groupName),
    );
    await onGroup('displayName', { op: 'replace', path: 'displayName', value: `${groupName} 2` }, (r) =>
      expect(r.displayName).toBe(`${groupName} 2`),
    );
    covered.add('displayName');
    expectScimError(await patch(groupPath, [{ op: 'remove', path: 'displayName' }]), 400, 'invalidValue');
    expectScimError(
      await patch(groupPath, [{ op: 'replace', path: 'displayName', value: `${groupName} ` }]),
      400,
      'invalidValue',
    );
    await onGroup('externalId', { op: 'add', path: 'externalId', value: 'G-1' }, (r) =>
      expect(r.externalId).toBe('G-1'),
    );
    await onGroup('externalId', { op: 'replace', path: 'externalId', value: 'G-2' }, (r) =>
      expect(r.externalId).toBe('G-2'),
    );
    await onGroup('externalId', { op: 'remove', path: 'externalId' }, (r) =>
      expect(r).not.toHaveProperty('externalId'),
    );
    const member = { value: user.id, display: 'Every', type: 'User', $ref: `../Users/${user.id}` };
    await onGroup('members', { op: 'add', path: 'members', value: [member] }, (r) =>
      expect(r.members).toEqual([member]),
    );
    for (const sub of ['value', 'display', 'type', '$ref']) {
      covered.add(`members.${sub}`);
      expectScimError(
        await patch(groupPath, [{ op: 'replace', path: `members[value eq "${user.id}"].${sub}`, value: 'x' }]),
        400,
        'mutability',
      );
    }
    expectScimError(
      await patch(groupPath, [{ op: 'replace', path: `members[value eq "${user.id}"]`, value: { display: 'x' } }]),
      400,
      'mutability',
    );
    await onGroup('members', { op: 'replace', path: 'members', value: [{ value: user.id }] }, (r) =>
      expect(r.members).toEqual([{ value: user.id }]),
    );
    await onGroup('members', { op: 'remove', path: 'members' }, (r) => expect(r.members ?? []).toEqual([]));

    const published = [
      ...(await publishedNames(USER)),
      ...(await publishedNames(ENTERPRISE)),
      ...(await publishedNames(GROUP)),
    ];
    expect([...covered].sort()).toEqual([...new Set(published)].sort());
  });
});
