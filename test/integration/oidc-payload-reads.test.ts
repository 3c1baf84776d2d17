import { createPostgresAdapter, findById } from '../../sign-in/oidc/adapter';
import { poolOf } from '../../platform/store/database';
import { upsertOidcPayload } from '../../platform/store/oidc-payloads';
import { useScratchStore } from '../support/scratch-store';

// Issue 42: reads by id asked for in one turn of the event loop share one statement. oidc-provider looks a token up
// as three models at once at introspection and revocation (no token_type_hint), and concurrent requests read at once.

const db = useScratchStore('ips_payload_reads');

/** Connections checked out of the pool while `run` runs: one per statement outside a transaction. */
async function statementsDuring<T>(run: () => Promise<T>): Promise<{ result: T; statements: number }> {
  let statements = 0;
  const count = () => statements++;
  poolOf(db()).on('acquire', count);
  try {
    return { result: await run(), statements };
  } finally {
    poolOf(db()).off('acquire', count);
  }
}

const store = (model: string, id: string, payload: Record<string, unknown>, expiresInSeconds = 600) =>
  upsertOidcPayload(db(), {
    model,
    id,
    payload: JSON.stringify(payload),
    grantId: null,
    userCode: null,
    uid: null,
    expiresAt: new Date(Date.now() + expiresInSeconds * 1000),
  });

test('a token looked up as three models at once costs one statement, and says which model it is', async () => {
  await store('AccessToken', 'at-1', { jti: 'at-1', kind: 'AccessToken' });
  const { result, statements } = await statementsDuring(() =>
    Promise.all(['AccessToken', 'ClientCredentials', 'RefreshToken'].map((model) => findById(db(), model, 'at-1'))),
  );
  expect(statements).toBe(1);
  const [access, credentials, refresh] = result;
  expect(access.row?.payload).toEqual({ jti: 'at-1', kind: 'AccessToken' });
  expect(credentials).toEqual({ row: undefined, alsoFoundAs: ['AccessToken'] });
  expect(refresh).toEqual({ row: undefined, alsoFoundAs: ['AccessToken'] });
});

test('concurrent reads of one artefact each get a payload of their own; an expired one is not found', async () => {
  await store('Session', 's-1', { accountId: 'u', authorizations: { web: { sid: 'x' } } });
  await store('Session', 's-old', { accountId: 'u' }, -1);
  const adapter = createPostgresAdapter(db())('Session');
  const { result, statements } = await statementsDuring(() =>
    Promise.all([adapter.find('s-1'), adapter.find('s-1'), adapter.find('s-old'), adapter.find('missing')]),
  );
  expect(statements).toBe(1);
  const [first, second, expired, missing] = result;
  expect(first).toEqual(second);
  (first!.authorizations as Record<string, unknown>).other = { sid: 'y' };
  expect(second!.authorizations).toEqual({ web: { sid: 'x' } });
  expect(expired).toBeUndefined();
  expect(missing).toBeUndefined();
});

test('reads in separate turns are separate statements, each as before', async () => {
  await store('Grant', 'g-1', { accountId: 'u' });
  const adapter = createPostgresAdapter(db())('Grant');
  const { result, statements } = await statementsDuring(async () => [
    await adapter.find('g-1'),
    await adapter.find('g-1'),
  ]);
  expect(statements).toBe(2);
  expect(result).toEqual([{ accountId: 'u' }, { accountId: 'u' }]);
});

test('reads by uid in one turn share a statement too (the session behind each token at introspection)', async () => {
  for (const [id, uid] of [
    ['s-a', 'uid-a'],
    ['s-b', 'uid-b'],
  ])
    await upsertOidcPayload(db(), {
      model: 'Session',
      id,
      payload: JSON.stringify({ uid, accountId: id }),
      grantId: null,
      userCode: null,
      uid,
      expiresAt: new Date(Date.now() + 60_000),
    });
  const adapter = createPostgresAdapter(db())('Session');
  const { result, statements } = await statementsDuring(() =>
    Promise.all([adapter.findByUid('uid-a'), adapter.findByUid('uid-b'), adapter.findByUid('uid-none')]),
  );
  expect(statements).toBe(1);
  expect(result).toEqual([{ uid: 'uid-a', accountId: 's-a' }, { uid: 'uid-b', accountId: 's-b' }, undefined]);
});

test('when a shared statement fails, each read is made again on its own: only the one that fails alone fails', async () => {
  await store('AccessToken', 'at-shared', { jti: 'at-shared' });
  // A NUL is refused by PostgreSQL: the statement it shares fails, and so does its own read; the others' succeed.
  const [good, bad, missing] = await Promise.allSettled([
    findById(db(), 'AccessToken', 'at-shared'),
    findById(db(), 'AccessToken', 'bad\u0000key'),
    findById(db(), 'RefreshToken', 'at-shared'),
  ]);
  expect(good).toMatchObject({ status: 'fulfilled', value: { row: { payload: { jti: 'at-shared' } } } });
  expect(bad.status).toBe('rejected');
  expect(missing).toEqual({ status: 'fulfilled', value: { row: undefined, alsoFoundAs: [] } });
});
