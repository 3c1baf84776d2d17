import { randomUUID } from 'node:crypto';
import { eventually, SIGN_IN_HARNESS, uniqueEmail, useHarness } from '../support/harness';
import { codeFlow } from '../support/code-flow';
import { relyingParty } from '../support/relying-party';

// Issue 41 item 11: users listed, searched and changed through the admin API. Every answer is also checked against
// the OpenAPI document by the harness, so a status or body the route table does not describe fails here.
const h = useHarness({ ...SIGN_IN_HARNESS, apps: { crm: {} } });

const PASSWORD = 'correct horse battery 9';
const CALLBACK = 'https://apps.example.com/callback';

async function created(email: string, body: Record<string, unknown> = {}) {
  const res = await h.admin('POST', '/api/v1/profile/', { email, ...body });
  expect(res.status).toBe(201);
  return res.body.userId as string;
}

const emailConfirmed = async (userId: string) =>
  (await h.context.db.selectFrom('users').select('email_confirmed').where('id', '=', userId).executeTakeFirstOrThrow())
    .email_confirmed;

describe('GET /api/v1/profile lists and searches users a page at a time', () => {
  test('a search over e-mail, name and id, paged in e-mail order with the opaque cursor', async () => {
    const tag = randomUUID().slice(0, 8);
    const emails = ['c', 'a', 'b'].map((letter) => `${letter}-${tag}@example.test`);
    const ids = [];
    for (const email of emails) ids.push(await created(email, { customAttributes: { tier: 'gold' } }));
    const namedEmail = `named-${randomUUID().slice(0, 8)}@example.test`;
    const byName = await created(namedEmail, { firstName: `Zora${tag}`, lastName: 'Quill' });

    const first = await h.admin('GET', `/api/v1/profile?search=${tag.toUpperCase()}&limit=2`);
    expect(first.status).toBe(200);
    expect(first.body.users.map((u: { email: string }) => u.email)).toEqual([emails[1], emails[2]]);
    expect(first.body.users[0]).toMatchObject({ userId: ids[1], provisionedApps: ['crm'], active: true });
    expect(first.body.next).toEqual(expect.any(String));
    expect(first.body.next).not.toContain(emails[2]);

    const second = await h.admin('GET', `/api/v1/profile?search=${tag}&limit=2&after=${first.body.next}`);
    // The name holds the search too; the last page says it is the last.
    expect(second.body.users.map((u: { email: string }) => u.email)).toEqual([emails[0], namedEmail]);
    expect(second.body.next).toBeNull();

    // A name, first and last together, and an id find their user.
    const named = await h.admin('GET', `/api/v1/profile?search=${encodeURIComponent(`zora${tag} quill`)}`);
    expect(named.body.users.map((u: { userId: string }) => u.userId)).toEqual([byName]);
    const byId = await h.admin('GET', `/api/v1/profile?search=${ids[0]}`);
    expect(byId.body.users.map((u: { userId: string }) => u.userId)).toEqual([ids[0]]);
    // A search's text is no pattern: `%` matches only itself.
    expect((await h.admin('GET', '/api/v1/profile?search=%25')).body.users).toEqual([]);
  });

  test('without a search every user is listed; `email` still finds one user', async () => {
    const email = uniqueEmail('plain');
    const id = await created(email);
    const seen: string[] = [];
    let after = '';
    for (let page = 0; page < 100; page++) {
      const res = await h.admin('GET', `/api/v1/profile?limit=200${after && `&after=${after}`}`);
      seen.push(...res.body.users.map((u: { userId: string }) => u.userId));
      if (!res.body.next) break;
      after = res.body.next;
    }
    expect(seen).toContain(id);
    expect(new Set(seen).size).toBe(seen.length);
    const found = await h.admin('GET', `/api/v1/profile?email=${encodeURIComponent(email.toUpperCase())}`);
    expect(found.body).toMatchObject({ userId: id, email, provisionedApps: ['crm'] });
  });

  test('a cursor of no page, a limit out of bounds or email with search is a 400 naming the parameter', async () => {
    for (const [query, field] of [
      ['after=bm90LWEtY3Vyc29y', 'after'],
      ['after=%24%24', 'after'],
      ['limit=0', 'limit'],
      ['limit=201', 'limit'],
      [`search=${'x'.repeat(300)}`, 'search'],
      ['email=a%40example.test&search=a', 'email'],
      ['sort=email', ''],
    ]) {
      const res = await h.admin('GET', `/api/v1/profile?${query}`);
      expect([query, res.status]).toEqual([query, 400]);
      if (field) expect(res.body.detail).toMatch(new RegExp(`^${field}: `));
    }
    expect((await h.request('GET', '/api/v1/profile')).status).toBe(401);
  });
});

describe('PATCH /api/v1/profile/{userId} changes a user', () => {
  test('names, custom attributes (merged, null removes) and e-mail; the old address is free again', async () => {
    const oldEmail = uniqueEmail('before');
    const id = await created(oldEmail, {
      firstName: 'Ann',
      lastName: 'Old',
      emailConfirmed: true,
      customAttributes: { tier: 'gold', region: 'eu' },
    });
    const newEmail = uniqueEmail('after');
    const res = await h.admin('PATCH', `/api/v1/profile/${id}`, {
      firstName: 'Anna',
      lastName: null,
      email: newEmail,
      customAttributes: { tier: 'platinum', region: null, team: 'blue' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      userId: id,
      email: newEmail,
      firstName: 'Anna',
      lastName: null,
      customAttributes: { tier: 'platinum', team: 'blue' },
      active: true,
      provisionedApps: ['crm'],
    });
    // ASP.NET Identity's SetEmailAsync: a new address is unconfirmed until the user (or the admin, saying so) confirms it.
    expect(await emailConfirmed(id)).toBe(false);
    expect((await h.admin('GET', `/api/v1/profile?email=${encodeURIComponent(newEmail)}`)).body.userId).toBe(id);
    // The user name moved with the e-mail: the old address makes a new account.
    await created(oldEmail);

    const vouched = await h.admin('PATCH', `/api/v1/profile/${id}`, {
      email: uniqueEmail('vouched'),
      emailConfirmed: true,
    });
    expect(vouched.status).toBe(200);
    expect(await emailConfirmed(id)).toBe(true);
    const events = await h.admin('GET', `/api/v1/audit-events?userId=${id}&type=profile-updated`);
    expect(events.body.events[0]).toMatchObject({ actor: 'admin-key', detail: { fields: 'email,emailConfirmed' } });
    expect(JSON.stringify(events.body)).not.toContain('vouched');
  });

  test("another user's e-mail is a 409 and changes nothing; an unknown id a 404; a bad body a 400", async () => {
    const taken = uniqueEmail('taken');
    await created(taken);
    const id = await created(uniqueEmail('mover'), { firstName: 'Kept' });
    const clash = await h.admin('PATCH', `/api/v1/profile/${id}`, { email: taken.toUpperCase(), firstName: 'Lost' });
    expect(clash.status).toBe(409);
    expect(clash.body.detail).toContain(taken.toUpperCase());
    expect((await h.admin('GET', `/api/v1/profile/${id}`)).body.firstName).toBe('Kept');

    expect((await h.admin('PATCH', `/api/v1/profile/no-such-${randomUUID()}`, { firstName: 'X' })).status).toBe(404);
    for (const [body, field] of [
      [{}, ''],
      [{ email: 'not-an-address' }, 'email'],
      [{ customAttributes: { sub: 'someone-else' } }, 'customAttributes.sub'],
      [{ customAttributes: { tier: 'x'.repeat(5000) } }, 'customAttributes.tier'],
      [{ firstName: 'x'.repeat(300) }, 'firstName'],
      [{ password: 'not through here' }, ''],
      [{ active: 'no' }, 'active'],
    ] as const) {
      const res = await h.admin('PATCH', `/api/v1/profile/${id}`, body);
      expect([JSON.stringify(body), res.status]).toEqual([JSON.stringify(body), 400]);
      if (field) expect(res.body.detail).toContain(`${field}: `);
    }
    expect((await h.request('PATCH', `/api/v1/profile/${id}`, { firstName: 'X' })).status).toBe(401);
  });

  test('active=false ends the sessions and deprovisions as SCIM deactivation does; active=true provisions again', async () => {
    const clientId = `patch-${randomUUID().slice(0, 8)}`;
    const put = await h.admin('PUT', `/api/v1/clients/${clientId}`, {
      AllowedGrantTypes: ['authorization_code'],
      RedirectUris: [CALLBACK],
      AllowedScopes: ['openid', 'profile'],
      ClientSecrets: [{ Value: 'client-secret-sixteen' }],
    });
    expect(put.status).toBe(201);
    const email = uniqueEmail('leaver');
    const id = await created(email, { password: PASSWORD });
    const flow = codeFlow(CALLBACK);
    const rp = await relyingParty(h.api.publicUrl, clientId, 'client-secret-sixteen');
    const started = await flow.start(rp, 'openid profile');
    await flow.tokens(rp, started, await flow.signIn(started, email, PASSWORD));
    const sessionsOf = () =>
      h.context.db
        .selectFrom('oidc_payloads')
        .select('model')
        .where((eb) => eb(eb.ref('payload', '->>').key('accountId' as never), '=', id))
        .execute();
    expect((await sessionsOf()).length).toBeGreaterThan(0);

    const off = await h.admin('PATCH', `/api/v1/profile/${id}`, { active: false });
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ active: false, provisionedApps: [] });
    expect(await sessionsOf()).toEqual([]);
    // The app's DELETE may land a moment after the answer (as after SCIM's deactivation): wait for it, then exactly one.
    await eventually(() =>
      expect(h.apps.crm.state.calls.filter((c) => c.method === 'DELETE' && c.path === `/users/${id}`)).toHaveLength(1),
    );
    // Signing in again is refused: the password form does not lead back to the client.
    const again = await flow.start(rp, 'openid profile');
    const refused = await flow.signIn(again, email, PASSWORD);
    expect(refused instanceof URL ? `back at the client: ${refused.href}` : refused.status).toBe(200);
    const failed = await h.admin('GET', `/api/v1/audit-events?userId=${id}&type=sign-in-failed`);
    expect(failed.body.events[0]?.detail).toEqual({ reason: 'deactivated' });

    const on = await h.admin('PATCH', `/api/v1/profile/${id}`, { active: true });
    expect(on.status).toBe(200);
    expect(on.body).toMatchObject({ active: true, provisionedApps: ['crm'] });
  });

  test('a reactivation an app refuses is a 422 and the user stays inactive', async () => {
    const id = await created(uniqueEmail('refused'));
    expect((await h.admin('PATCH', `/api/v1/profile/${id}`, { active: false })).status).toBe(200);
    h.apps.crm.state.behaviour = { rejectWith: 'no seat left' };
    const res = await h.admin('PATCH', `/api/v1/profile/${id}`, { active: true, firstName: 'Back' });
    expect(res.status).toBe(422);
    expect(res.body.appId).toBe('crm');
    expect((await h.admin('GET', `/api/v1/profile/${id}`)).body).toMatchObject({ active: false, firstName: 'Back' });
  });
});
