import { createDownstreamApp, startDownstreamApp, type RunningDownstreamApp } from '../../examples/downstream-app/app';

const KEY = 'reference-app-key';

describe('the reference downstream app keeps pending records by transaction', () => {
  let app: RunningDownstreamApp;
  beforeAll(async () => {
    app = await startDownstreamApp({ apiKey: KEY });
  });
  afterAll(() => app.close());

  const call = (method: string, path: string, body?: unknown, key = KEY) =>
    fetch(`${app.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  test('Try creates a pending record, Confirm promotes it, Cancel leaves a confirmed record alone', async () => {
    expect(
      await (await call('POST', '/try', { transactionId: 't1', userId: 'u1', email: 'u1@example.test' })).json(),
    ).toMatchObject({ approved: true });
    expect(app.state.records.get('t1')?.state).toBe('pending');
    expect((await call('POST', '/confirm', { transactionId: 't1' })).status).toBe(200);
    expect(app.state.records.get('t1')?.state).toBe('confirmed');
    expect((await call('POST', '/cancel', { transactionId: 't1' })).status).toBe(200);
    expect(app.state.records.get('t1')?.state).toBe('confirmed');
  });

  test('Cancel deletes a pending record; Confirm after that answers 404', async () => {
    await call('POST', '/try', { transactionId: 't2', userId: 'u2', email: 'u2@example.test' });
    await call('POST', '/cancel', { transactionId: 't2' });
    expect(app.state.records.has('t2')).toBe(false);
    expect((await call('POST', '/confirm', { transactionId: 't2' })).status).toBe(404);
  });

  test('DELETE /users/{id} removes the user; a wrong bearer key gets 401', async () => {
    await call('POST', '/try', { transactionId: 't3', userId: 'u3', email: 'u3@example.test' });
    expect((await call('DELETE', '/users/u3')).status).toBe(204);
    expect([...app.state.records.values()].some((r) => r.userId === 'u3')).toBe(false);
    expect(
      (await call('POST', '/try', { transactionId: 't4', userId: 'u4', email: 'u4@example.test' }, 'wrong')).status,
    ).toBe(401);
  });
});

describe('unconfirmed records expire after the TTL', () => {
  test('a pending record older than the TTL is dropped; a confirmed one is kept', () => {
    const { state, expirePending } = createDownstreamApp({ apiKey: KEY, pendingTtlMs: 1000 });
    const now = Date.now();
    state.records.set('old', {
      transactionId: 'old',
      userId: 'a',
      email: 'a@x.test',
      state: 'pending',
      createdAt: now - 2000,
    });
    state.records.set('fresh', {
      transactionId: 'fresh',
      userId: 'b',
      email: 'b@x.test',
      state: 'pending',
      createdAt: now,
    });
    state.records.set('done', {
      transactionId: 'done',
      userId: 'c',
      email: 'c@x.test',
      state: 'confirmed',
      createdAt: now - 5000,
    });
    expect(expirePending(now)).toBe(1);
    expect([...state.records.keys()].sort()).toEqual(['done', 'fresh']);
  });
});
