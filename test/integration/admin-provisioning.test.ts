import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Connection } from '@temporalio/client';
import { temporalClient } from '../../platform/temporal/data-converter';
import { createApiApp } from '../../api/app';
import { createDb, type Db } from '../../platform/store/database';
import { listProvisionedApps } from '../../platform/store/provisions';
import { findUserIdByEmail } from '../../platform/store/users';
import { provisioningWorkflowId } from '../../provisioning/workflows/ids';
import { ADMIN_KEY, eventually, storedPasswordHash, uniqueEmail, useHarness } from '../support/harness';
import { codecOf, historyText, payloadValue } from '../support/history';
import { logger } from '../../platform/observability/logger';
import { counterValue } from '../support/metrics';

const h = useHarness({ apps: { crm: {}, billing: {}, wiki: {} } });

const tryCalls = (appId: string, userId: string) =>
  h.apps[appId].state.calls.filter((c) => c.path === '/try' && (c.body as { userId?: string })?.userId === userId);
const callsFor = (appId: string, transactionId: string) =>
  h.apps[appId].state.calls
    .filter((c) => (c.body as { transactionId?: string })?.transactionId === transactionId)
    .map((c) => c.path);

/** An API of the harness's configuration on a store and a Temporal connection of the test's choosing. */
async function apiOn(db: Db, connection: Connection): Promise<Server> {
  const server = createApiApp({
    config: h.config,
    db,
    temporal: temporalClient(connection, h.config),
    http: h.context.http,
    apps: h.context.apps,
    publicUrl: 'http://127.0.0.1',
  }).listen(0, '127.0.0.1');
  await new Promise((r) => server.once('listening', r));
  return server;
}

/** A user created through the admin API (201 expected), with its e-mail. */
async function createdUser(prefix: string, body: Record<string, unknown> = {}) {
  const email = uniqueEmail(prefix);
  const res = await h.admin('POST', '/api/v1/profile/', { email, ...body });
  expect(res.status).toBe(201);
  return { email, res };
}

describe('admin user creation provisions into every configured app', () => {
  test('all apps approve: Confirm to all, one UserProvisions record per app, 201 with the user', async () => {
    const email = uniqueEmail('alice');
    const res = await h.admin('POST', '/api/v1/profile/', {
      email,
      firstName: 'Alice',
      password: 'correct horse battery',
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      email,
      firstName: 'Alice',
      lastName: null,
      organizationId: null,
      customAttributes: {},
      provisionedApps: ['billing', 'crm', 'wiki'],
    });
    expect(JSON.stringify(res.body)).not.toMatch(/password|AQAAAA/i);
    const userId = res.body.userId;
    expect(await listProvisionedApps(h.context.db, userId)).toEqual(['billing', 'crm', 'wiki']);
    for (const appId of ['crm', 'billing', 'wiki']) {
      expect(h.apps[appId].state.confirmedUserIds()).toContain(userId);
      const [tryCall] = tryCalls(appId, userId);
      expect(callsFor(appId, (tryCall.body as { transactionId: string }).transactionId)).toEqual(['/try', '/confirm']);
    }
    expect(await storedPasswordHash(h, userId)).toMatch(/^AQAAAA/);
  });

  test('Try bodies omit nulls and an empty customAttributes, and Try, Confirm and Cancel carry the app key as bearer', async () => {
    const { email, res } = await createdUser('bare');
    const [bare] = tryCalls('crm', res.body.userId);
    expect(Object.keys(bare.body as object).sort()).toEqual(['email', 'transactionId', 'userId']);
    expect(bare.body).toMatchObject({ email, userId: res.body.userId, transactionId: expect.any(String) });

    const profile = { firstName: 'Fay', lastName: 'Full', organizationId: 'org-1', customAttributes: { tier: 'gold' } };
    const full = await h.admin('POST', '/api/v1/profile/', { email: uniqueEmail('full'), ...profile });
    const [fullTry] = tryCalls('crm', full.body.userId);
    expect(fullTry.body).toEqual({
      transactionId: expect.any(String),
      userId: full.body.userId,
      email: full.body.email,
      ...profile,
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
    const ids = ['crm', 'billing', 'wiki'].map(
      (appId) => (tryCalls(appId, res.body.userId)[0].body as { transactionId: string }).transactionId,
    );
    expect(new Set(ids).size).toBe(1);
    expect(ids[0]).toContain(provisioningWorkflowId(res.body.userId));
    expect(ids[0]).not.toContain(res.body.email);
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
    const res = await h.admin('POST', '/api/v1/profile/', {
      email: uniqueEmail('attrs'),
      customAttributes: { tier: 'gold', team: 'blue' },
    });
    expect(res.status).toBe(201);
    expect(res.body.customAttributes).toEqual({ tier: 'platinum', team: 'blue', crmId: 'c-1' });
    expect(tryCalls('wiki', res.body.userId)[0].body).toMatchObject({
      customAttributes: { tier: 'platinum', team: 'blue', crmId: 'c-1' },
    });
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
    // The background workflow keeps trying; each try after the first is counted for operators.
    await eventually(async () =>
      expect(await counterValue('deprovisioning_retries_total', { app: 'billing' })).toBeGreaterThan(0),
    );
    // The retry is counted when it starts, its failed call when the call has failed.
    await eventually(async () =>
      expect(
        await counterValue('tcc_calls_total', { app: 'billing', phase: 'delete', outcome: 'error' }),
      ).toBeGreaterThan(1),
    );
  });

  test('DELETE of an unknown user answers 404', async () => {
    expect((await h.admin('DELETE', '/api/v1/profile/nobody')).status).toBe(404);
  });
});

describe('admin API input and policy', () => {
  test('requests without a bearer key get 401, with a wrong key 401 invalid_token', async () => {
    const none = await h.request('POST', '/api/v1/profile/', { email: uniqueEmail('anon') });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer');
    const wrong = await h.request(
      'POST',
      '/api/v1/profile/',
      { email: uniqueEmail('anon') },
      { authorization: 'Bearer nope' },
    );
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
  });

  test('an invalid body answers 400 with a problem naming the field, and creates nothing', async () => {
    const bad = await h.admin('POST', '/api/v1/profile/', { email: 'not-an-email', password: 'a long passphrase 7' });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toContain('application/problem+json');
    expect(bad.body.detail).toMatch(/email/);
    // The password follows Auth:PasswordPolicy (8 characters by default), as registration and SCIM do.
    const short = await h.admin('POST', '/api/v1/profile/', { email: uniqueEmail('short'), password: 'short' });
    expect(short.status).toBe(400);
    expect(short.body.detail).toBe('password: must be at least 8 characters');
    expect(short.body.detail).not.toContain('short ');
    const unknown = await h.admin('POST', '/api/v1/profile/', { email: uniqueEmail('x'), role: 'admin' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.detail).toMatch(/role/);
    const notJson = await h.request('POST', '/api/v1/profile/', '{"email":', {
      authorization: 'Bearer test-admin-key',
      'content-type': 'application/json',
    });
    expect(notJson.status).toBe(400);
    expect(notJson.body.detail).toMatch(/not valid JSON/);
  });

  test('a duplicate e-mail answers 409 and leaves one user', async () => {
    const { email, res: first } = await createdUser('dup');
    const again = await h.admin('POST', '/api/v1/profile/', { email: email.toUpperCase() });
    expect(again.status).toBe(409);
    // The admin API names the user that holds the e-mail, and finds it by e-mail.
    expect(again.body.userId).toBe(first.body.userId);
    const found = await h.admin('GET', `/api/v1/profile?email=${encodeURIComponent(email.toUpperCase())}`);
    expect(found.status).toBe(200);
    expect(found.body).toMatchObject({ userId: first.body.userId, email, provisionedApps: ['billing', 'crm', 'wiki'] });
    expect((await h.admin('GET', `/api/v1/profile?email=${encodeURIComponent(uniqueEmail('nobody'))}`)).status).toBe(
      404,
    );
    expect((await h.admin('GET', '/api/v1/profile?email=not-an-address')).status).toBe(400);
    const rows = await h.context.db
      .selectFrom('users')
      .select('id')
      .where('normalized_email', '=', email.toUpperCase())
      .execute();
    expect(rows).toHaveLength(1);
  });

  test('the e-mail is free again when the answer comes, after a refusal and after a creation', async () => {
    const email = uniqueEmail('again');
    h.apps.wiki.state.behaviour = { rejectWith: 'not today' };
    expect((await h.admin('POST', '/api/v1/profile/', { email })).status).toBe(422);
    h.apps.wiki.state.behaviour = {};
    const created = await h.admin('POST', '/api/v1/profile/', { email });
    expect(created.status).toBe(201);
    // The reservation is released before the answer goes out: the next request meets the user itself.
    expect(
      await h.context.db
        .selectFrom('creation_reservations')
        .select('workflow_id')
        .where('normalized_email', '=', email.toUpperCase())
        .execute(),
    ).toEqual([]);
    const again = await h.admin('POST', '/api/v1/profile/', { email });
    expect(again.status).toBe(409);
    expect(again.body.userId).toBe(created.body.userId);
  });

  test('a double submit runs one attempt: one 201, one 409, one user', async () => {
    h.apps.crm.state.behaviour = { tryDelayMs: 300 };
    const email = uniqueEmail('double');
    const answers = await Promise.all([
      h.admin('POST', '/api/v1/profile/', { email }),
      h.admin('POST', '/api/v1/profile/', { email }),
    ]);
    expect(answers.map((a) => a.status).sort()).toEqual([201, 409]);
    const userId = await findUserIdByEmail(h.context.db, email);
    expect(userId).toBeDefined();
    expect(
      h.apps.crm.state.calls.filter((c) => c.path === '/try' && (c.body as { email?: string }).email === email),
    ).toHaveLength(1);
  });

  test('while Temporal is unreachable, creation answers 503 with Retry-After at once, and the e-mail is free again', async () => {
    const connection = Connection.lazy({ address: '127.0.0.1:1', connectTimeout: 500, interceptors: [] });
    const server = await apiOn(h.context.db, connection);
    try {
      const email = uniqueEmail('outage');
      const started = Date.now();
      const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/profile/`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ email, password: 'outage passphrase' }),
      });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('5');
      expect(((await res.json()) as { detail: string }).detail).toMatch(/^the workflow service is unreachable/);
      expect(Date.now() - started).toBeLessThan(12_000);
      expect((await h.admin('POST', '/api/v1/profile/', { email })).status).toBe(201);
    } finally {
      server.close();
      await connection.close();
    }
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
    const server = await apiOn(db, connection);
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
  test('each attempt is one workflow named after the user (no e-mail in its id) on the configured task queue; its history holds no key, password or hash', async () => {
    const password = 'history-password-123';
    const { email, res } = await createdUser('history', { password });
    const workflowId = provisioningWorkflowId(res.body.userId);
    expect(workflowId).not.toContain(email);
    const description = await h.client.workflow.getHandle(workflowId).describe();
    expect(description.taskQueue).toBe(h.config.Temporal.TaskQueue);
    expect(description.status.name).toBe('COMPLETED');

    const text = await historyText(h.client, workflowId, codecOf(h.config));
    expect(text).toContain(email);
    expect(text).toContain(res.body.userId);
    const password_hash = await storedPasswordHash(h, res.body.userId);
    for (const secret of [password, password_hash!, ...Object.values(h.config.ProvisioningApps).map((a) => a.ApiKey)]) {
      expect(text).not.toContain(secret);
    }
  });
});

describe('password hashes do not outlive their attempt', () => {
  /** The credential references of every finished creation attempt of this harness, from their workflow inputs. */
  async function credentialRefs(): Promise<string[]> {
    const refs: string[] = [];
    for await (const run of h.client.workflow.list({
      query: `TaskQueue = '${h.config.Temporal.TaskQueue}' AND WorkflowType = 'createUserAndProvision' AND ExecutionStatus != 'Running'`,
    })) {
      const history = await h.client.workflow.getHandle(run.workflowId, run.runId).fetchHistory();
      const payload = history.events![0].workflowExecutionStartedEventAttributes!.input!.payloads![0];
      const { credentialRef: ref } = (await payloadValue(codecOf(h.config), payload)) as { credentialRef?: string };
      if (ref) refs.push(ref);
    }
    return refs;
  }

  test('no ending (provisioned, duplicate, rejected, partially confirmed) leaves the stashed hash behind: the attempt removes it when it keeps the user, the API with the answer', async () => {
    const email = uniqueEmail('stash');
    expect((await h.admin('POST', '/api/v1/profile/', { email, password: 'stashed passphrase' })).status).toBe(201);
    expect((await h.admin('POST', '/api/v1/profile/', { email, password: 'stashed passphrase' })).status).toBe(409);
    h.apps.wiki.state.behaviour = { rejectWith: 'no' };
    expect(
      (
        await h.admin('POST', '/api/v1/profile/', {
          email: uniqueEmail('stash-rejected'),
          password: 'stashed passphrase',
        })
      ).status,
    ).toBe(422);
    h.apps.wiki.state.behaviour = { confirmStatus: 500 };
    expect(
      (
        await h.admin('POST', '/api/v1/profile/', {
          email: uniqueEmail('stash-partial'),
          password: 'stashed passphrase',
        })
      ).status,
    ).toBe(502);

    const refs = await credentialRefs();
    expect(refs.length).toBeGreaterThanOrEqual(4);
    expect(await h.context.db.selectFrom('pending_credentials').select('id').where('id', 'in', refs).execute()).toEqual(
      [],
    );
  });
});

test('attribute names an app hands back that could reach a prototype are dropped with a warning', async () => {
  const warn = jest.spyOn(logger, 'warn').mockImplementation(() => {});
  try {
    h.apps.crm.state.behaviour = { assignAttributes: JSON.parse('{"__proto__":"x","constructor":"y","team":"blue"}') };
    const res = await h.admin('POST', '/api/v1/profile/', { email: uniqueEmail('proto-attrs') });
    expect(res.status).toBe(201);
    expect(res.body.customAttributes).toEqual({ team: 'blue' });
    expect(warn).toHaveBeenCalledWith(
      'provisioning: app crm answered Try with the attribute name "__proto__", which is not allowed; it was dropped',
    );
    expect(warn).toHaveBeenCalledWith(
      'provisioning: app crm answered Try with the attribute name "constructor", which is not allowed; it was dropped',
    );
  } finally {
    warn.mockRestore();
  }
});

describe('Idempotency-Key: a client whose answer was lost asks again and gets the same attempt', () => {
  const create = (key: string, body: unknown) =>
    h.request('POST', '/api/v1/profile/', body, { authorization: `Bearer ${ADMIN_KEY}`, 'idempotency-key': key });

  test('same key, same body: the same answer and one attempt, even while it still runs', async () => {
    h.apps.crm.state.behaviour = { tryDelayMs: 400 };
    const key = `key-${uniqueEmail('k')}`;
    const body = { email: uniqueEmail('idem'), password: 'idempotent passphrase' };
    const [first, concurrent] = await Promise.all([create(key, body), create(key, body)]);
    const later = await create(key, { ...body, password: 'not part of the fingerprint' });
    expect([first.status, concurrent.status, later.status]).toEqual([201, 201, 201]);
    expect(concurrent.body.userId).toBe(first.body.userId);
    expect(later.body).toEqual(first.body);
    expect(tryCalls('crm', first.body.userId)).toHaveLength(1);
  });

  test('a rejection is answered again, not tried again', async () => {
    h.apps.wiki.state.behaviour = { rejectWith: 'wiki is full' };
    const key = `key-${uniqueEmail('k')}`;
    const body = { email: uniqueEmail('idem-rejected') };
    const first = await create(key, body);
    h.apps.wiki.state.behaviour = {};
    const again = await create(key, body);
    expect(first.status).toBe(422);
    expect(again.status).toBe(422);
    expect(again.body).toEqual(first.body);
    expect(
      h.apps.crm.state.calls.filter((c) => c.path === '/try' && (c.body as { email?: string }).email === body.email),
    ).toHaveLength(1);
  });

  test('same key, another body: 422 with its own problem type', async () => {
    const key = `key-${uniqueEmail('k')}`;
    expect((await create(key, { email: uniqueEmail('idem-a') })).status).toBe(201);
    const other = await create(key, { email: uniqueEmail('idem-b') });
    expect(other.status).toBe(422);
    expect(other.body.type).toBe('urn:problem-type:idempotency-key-reused');
  });

  // Robustness issue, item 9: the key was scoped by the path's spelling, so another spelling created a second user.
  test('the same key on another spelling of the path is the same route: another body is 422, the same body the same user', async () => {
    const key = `key-${uniqueEmail('k')}`;
    const body = { email: uniqueEmail('idem-spelling') };
    const first = await create(key, body);
    expect(first.status).toBe(201);
    const shouting = (b: unknown) =>
      h.request('POST', '/API/V1/PROFILE/', b, { authorization: `Bearer ${ADMIN_KEY}`, 'idempotency-key': key });
    const other = await shouting({ email: uniqueEmail('idem-spelling-b') });
    expect(other.status).toBe(422);
    const same = await shouting(body);
    expect(same.status).toBe(201);
    expect(same.body.userId).toBe(first.body.userId);
  });

  test('a malformed key is refused', async () => {
    expect((await create('with space', { email: uniqueEmail('idem-bad') })).status).toBe(400);
  });
});
