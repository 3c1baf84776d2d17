import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { createApiApp } from '../../api/app';
import { createDb } from '../../store/database';
import { listProvisionedApps } from '../../store/provisions';
import { findUserIdByEmail } from '../../store/users';
import { creationWorkflowId } from '../../workflows/ids';
import { eventually, startHarness, uniqueEmail, type Harness } from '../support/harness';
import { historyText } from '../support/history';

let h: Harness;

beforeAll(async () => {
  h = await startHarness({ apps: { crm: {}, billing: {}, wiki: {} } });
});
afterAll(async () => {
  await h?.stop();
});
beforeEach(() => {
  for (const app of Object.values(h.apps)) app.state.behaviour = {};
});

const tryCalls = (appId: string, userId: string) => h.apps[appId].state.calls.filter((c) => c.path === '/try' && (c.body as { userId?: string })?.userId === userId);
const callsFor = (appId: string, transactionId: string) =>
  h.apps[appId].state.calls.filter((c) => (c.body as { transactionId?: string })?.transactionId === transactionId).map((c) => c.path);

describe('admin user creation provisions into every configured app', () => {
  test('all apps approve: Confirm to all, one UserProvisions record per app, 201 with the user', async () => {
    const email = uniqueEmail('alice');
    const res = await h.admin('POST', '/api/v1/profile/', { email, firstName: 'Alice', password: 'correct horse battery' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ email, firstName: 'Alice', lastName: null, organizationId: null, customAttributes: {}, provisionedApps: ['billing', 'crm', 'wiki'] });
    expect(JSON.stringify(res.body)).not.toMatch(/password|AQAAAA/i);
    const userId = res.body.userId;
    expect(await listProvisionedApps(h.context.db, userId)).toEqual(['billing', 'crm', 'wiki']);
    for (const appId of ['crm', 'billing', 'wiki']) {
      expect(h.apps[appId].state.confirmedUserIds()).toContain(userId);
      const [tryCall] = tryCalls(appId, userId);
      expect(callsFor(appId, (tryCall.body as { transactionId: string }).transactionId)).toEqual(['/try', '/confirm']);
    }
    const stored = await h.context.db.selectFrom('users').select(['password_hash']).where('id', '=', userId).executeTakeFirstOrThrow();
    expect(stored.password_hash).toMatch(/^AQAAAA/);
  });

  test('Try bodies omit nulls and an empty customAttributes, and Try, Confirm and Cancel carry the app key as bearer', async () => {
    const email = uniqueEmail('bare');
    const res = await h.admin('POST', '/api/v1/profile/', { email });
    expect(res.status).toBe(201);
    const [bare] = tryCalls('crm', res.body.userId);
    expect(Object.keys(bare.body as object).sort()).toEqual(['email', 'transactionId', 'userId']);
    expect(bare.body).toMatchObject({ email, userId: res.body.userId, transactionId: expect.any(String) });

    const full = await h.admin('POST', '/api/v1/profile/', {
      email: uniqueEmail('full'), firstName: 'Fay', lastName: 'Full', organizationId: 'org-1', customAttributes: { tier: 'gold' },
    });
    const [fullTry] = tryCalls('crm', full.body.userId);
    expect(fullTry.body).toEqual({
      transactionId: expect.any(String), userId: full.body.userId, email: full.body.email,
      firstName: 'Fay', lastName: 'Full', organizationId: 'org-1', customAttributes: { tier: 'gold' },
    });

    for (const appId of ['crm', 'billing', 'wiki']) {
      const config = h.config.ProvisioningApps[appId];
      const calls = h.apps[appId].state.calls.filter((c) => ['/try', '/confirm', '/cancel'].includes(c.path));
      expect(calls.length).toBeGreaterThan(0);
      for (const call of calls) expect(call.authorization).toBe(`Bearer ${config.ApiKey}`);
    }
  });

  test('one transactionId is shared by the Try and Confirm calls of an attempt', async () => {
    const res = await h.admin('POST', '/api/v1/profile/', { email: uniqueEmail('tx') });
    const ids = ['crm', 'billing', 'wiki'].map((appId) => (tryCalls(appId, res.body.userId)[0].body as { transactionId: string }).transactionId);
    expect(new Set(ids).size).toBe(1);
    expect(ids[0]).toContain(creationWorkflowId('admin-api', res.body.email));
  });

  test('organizationId from a Try response applies only when the user has none, and later apps see it', async () => {
    h.apps.crm.state.behaviour = { assignOrganization: 'org-crm' };
    h.apps.billing.state.behaviour = { assignOrganization: 'org-billing' };
    const res = await h.admin('POST', '/api/v1/profile/', { email: uniqueEmail('org') });
    expect(res.status).toBe(201);
    expect(res.body.organizationId).toBe('org-crm');
    expect(tryCalls('crm', res.body.userId)[0].body).not.toHaveProperty('organizationId');
    expect(tryCalls('billing', res.body.userId)[0].body).toMatchObject({ organizationId: 'org-crm' });
    expect(tryCalls('wiki', res.body.userId)[0].body).toMatchObject({ organizationId: 'org-crm' });

    const own = await h.admin('POST', '/api/v1/profile/', { email: uniqueEmail('own-org'), organizationId: 'org-own' });
    expect(own.body.organizationId).toBe('org-own');
    const stored = await h.admin('GET', `/api/v1/profile/${res.body.userId}`);
    expect(stored.body.organizationId).toBe('org-crm');
  });

  test('customAttributes from Try responses merge into the user key by key', async () => {
    h.apps.crm.state.behaviour = { assignAttributes: { crmId: 'c-1', tier: 'silver' } };
    h.apps.billing.state.behaviour = { assignAttributes: { tier: 'platinum' } };
    const res = await h.admin('POST', '/api/v1/profile/', { email: uniqueEmail('attrs'), customAttributes: { tier: 'gold', team: 'blue' } });
    expect(res.status).toBe(201);
    expect(res.body.customAttributes).toEqual({ tier: 'platinum', team: 'blue', crmId: 'c-1' });
    expect(tryCalls('wiki', res.body.userId)[0].body).toMatchObject({ customAttributes: { tier: 'platinum', team: 'blue', crmId: 'c-1' } });
    const stored = await h.admin('GET', `/api/v1/profile/${res.body.userId}`);
    expect(stored.body.customAttributes).toEqual({ tier: 'platinum', team: 'blue', crmId: 'c-1' });
  });

  test('already-provisioned app/user pairs are skipped', async () => {
    const res = await h.admin('POST', '/api/v1/profile/', { email: uniqueEmail('skip') });
    const again = await h.admin('POST', `/api/v1/profile/${res.body.userId}/provisioning`);
    expect(again.status).toBe(200);
    expect(again.body.provisionedApps).toEqual(['billing', 'crm', 'wiki']);
    for (const appId of ['crm', 'billing', 'wiki']) expect(tryCalls(appId, res.body.userId)).toHaveLength(1);
  });

  test('GET returns the user with the apps it is provisioned into, 404 for an unknown id', async () => {
    const res = await h.admin('POST', '/api/v1/profile/', { email: uniqueEmail('get'), lastName: 'Getter' });
    const got = await h.admin('GET', `/api/v1/profile/${res.body.userId}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ ...res.body });
    const missing = await h.admin('GET', '/api/v1/profile/no-such-user');
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toContain('application/problem+json');
  });
});

describe('deleting a user deprovisions it from every app it was provisioned into', () => {
  test('DELETE answers 204, removes the user and sends DELETE /users/{id} to each app', async () => {
    const res = await h.admin('POST', '/api/v1/profile/', { email: uniqueEmail('del') });
    const userId = res.body.userId;
    const del = await h.admin('DELETE', `/api/v1/profile/${userId}`);
    expect(del.status).toBe(204);
    expect((await h.admin('GET', `/api/v1/profile/${userId}`)).status).toBe(404);
    expect(await listProvisionedApps(h.context.db, userId)).toEqual([]);
    await eventually(() => {
      for (const appId of ['crm', 'billing', 'wiki']) expect(h.apps[appId].state.deletedUsers).toContain(userId);
    });
    const call = h.apps.crm.state.calls.find((c) => c.method === 'DELETE' && c.path === `/users/${userId}`);
    expect(call?.authorization).toBe(`Bearer ${h.config.ProvisioningApps.crm.ApiKey}`);
  });

  test('a failing deprovisioning DELETE does not block the deletion or the other apps', async () => {
    const res = await h.admin('POST', '/api/v1/profile/', { email: uniqueEmail('del-fail') });
    h.apps.billing.state.behaviour = { deleteStatus: 500 };
    const del = await h.admin('DELETE', `/api/v1/profile/${res.body.userId}`);
    expect(del.status).toBe(204);
    expect((await h.admin('GET', `/api/v1/profile/${res.body.userId}`)).status).toBe(404);
    await eventually(() => {
      expect(h.apps.crm.state.deletedUsers).toContain(res.body.userId);
      expect(h.apps.wiki.state.deletedUsers).toContain(res.body.userId);
    });
    expect(h.apps.billing.state.deletedUsers).not.toContain(res.body.userId);
  });

  test('DELETE of an unknown user answers 404', async () => {
    expect((await h.admin('DELETE', '/api/v1/profile/nobody')).status).toBe(404);
  });
});

describe('admin API input and policy', () => {
  test('requests without a bearer key get 401, with a wrong key 403', async () => {
    const none = await h.request('POST', '/api/v1/profile/', { email: uniqueEmail('anon') });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    const wrong = await h.request('POST', '/api/v1/profile/', { email: uniqueEmail('anon') }, { authorization: 'Bearer nope' });
    expect(wrong.status).toBe(403);
  });

  test('an invalid body answers 400 with a problem naming the field, and creates nothing', async () => {
    const bad = await h.admin('POST', '/api/v1/profile/', { email: 'not-an-email', password: 'short' });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toContain('application/problem+json');
    expect(bad.body.detail).toMatch(/email/);
    expect(bad.body.detail).toMatch(/password: must be at least 8 characters/);
    expect(bad.body.detail).not.toContain('short');
    const unknown = await h.admin('POST', '/api/v1/profile/', { email: uniqueEmail('x'), role: 'admin' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.detail).toMatch(/role/);
    const notJson = await h.request('POST', '/api/v1/profile/', '{"email":', { authorization: 'Bearer test-admin-key', 'content-type': 'application/json' });
    expect(notJson.status).toBe(400);
    expect(notJson.body.detail).toMatch(/not valid JSON/);
  });

  test('a duplicate e-mail answers 409 and leaves one user', async () => {
    const email = uniqueEmail('dup');
    expect((await h.admin('POST', '/api/v1/profile/', { email })).status).toBe(201);
    const again = await h.admin('POST', '/api/v1/profile/', { email: email.toUpperCase() });
    expect(again.status).toBe(409);
    const rows = await h.context.db.selectFrom('users').select('id').where('normalized_email', '=', email.toUpperCase()).execute();
    expect(rows).toHaveLength(1);
  });

  test('a double submit runs one attempt: one 201, one 409, one user', async () => {
    h.apps.crm.state.behaviour = { tryDelayMs: 300 };
    const email = uniqueEmail('double');
    const answers = await Promise.all([h.admin('POST', '/api/v1/profile/', { email }), h.admin('POST', '/api/v1/profile/', { email })]);
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409]);
    const userId = await findUserIdByEmail(h.context.db, email);
    expect(userId).toBeDefined();
    expect(h.apps.crm.state.calls.filter((c) => c.path === '/try' && (c.body as { email?: string }).email === email)).toHaveLength(1);
  });

  test('GET /healthz answers 200 when store and Temporal are reachable', async () => {
    const res = await h.request('GET', '/healthz');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok', store: 'ok', temporal: 'ok' });
  });

  test('GET /healthz answers 503 naming what is unreachable', async () => {
    // Port 1 on loopback: nothing listens there, so both checks fail without leaving the machine.
    const db = createDb('postgres://postgres@127.0.0.1:1/none');
    const connection = Connection.lazy({ address: '127.0.0.1:1', connectTimeout: 500, interceptors: [] }); // no retry timers outliving the test
    const server = createApiApp({ config: h.config, db, temporal: new Client({ connection }), http: h.context.http }).listen(0, '127.0.0.1');
    await new Promise((r) => server.once('listening', r));
    try {
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/healthz`);
      expect(res.status).toBe(503);
      const body = (await res.json()) as Record<string, string>;
      expect(body.status).toBe('unavailable');
      expect(body.store).toMatch(/^unreachable/);
      expect(body.temporal).toMatch(/^unreachable/);
    } finally {
      server.close();
      await db.destroy();
      await connection.close();
    }
  });
});

describe('operators read every attempt in the Temporal UI', () => {
  test('each attempt is one workflow named after trigger and user on the configured task queue; its history holds no key, password or hash', async () => {
    const email = uniqueEmail('history');
    const password = 'history-password-123';
    const res = await h.admin('POST', '/api/v1/profile/', { email, password });
    expect(res.status).toBe(201);
    const workflowId = creationWorkflowId('admin-api', email);
    const description = await h.env.client.workflow.getHandle(workflowId).describe();
    expect(description.taskQueue).toBe(h.config.Temporal.TaskQueue);
    expect(description.status.name).toBe('COMPLETED');

    const text = await historyText(h.env.client, workflowId);
    expect(text).toContain(email);
    expect(text).toContain(res.body.userId);
    const { password_hash } = await h.context.db.selectFrom('users').select('password_hash').where('id', '=', res.body.userId).executeTakeFirstOrThrow();
    for (const secret of [password, password_hash!, ...Object.values(h.config.ProvisioningApps).map((a) => a.ApiKey)]) {
      expect(text).not.toContain(secret);
    }
  });
});
