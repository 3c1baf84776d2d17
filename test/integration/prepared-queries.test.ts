import { findLiveOidcPayload, upsertOidcPayload } from '../../platform/store/oidc-payloads';
import { prepared } from '../../platform/store/prepared';
import type { Db } from '../../platform/store/database';
import { useScratchStore } from '../support/scratch-store';

// Issue 42: the hottest statements are built by kysely once and sent again with each call's arguments.

const db = useScratchStore('ips_prepared');

test('the same text serves every call: nulls, dates and other values bind as the first call built them', async () => {
  const expiresAt = new Date(Date.now() + 60_000);
  await upsertOidcPayload(db(), {
    model: 'Session',
    id: 'a',
    payload: JSON.stringify({ n: 1 }),
    grantId: null,
    userCode: null,
    uid: 'uid-a',
    expiresAt,
  });
  await upsertOidcPayload(db(), {
    model: 'Session',
    id: 'b',
    payload: JSON.stringify({ n: 2 }),
    grantId: 'g',
    userCode: 'code',
    uid: null,
    expiresAt: null,
  });
  // The conflict path: the same key written again replaces every column.
  await upsertOidcPayload(db(), {
    model: 'Session',
    id: 'a',
    payload: JSON.stringify({ n: 3 }),
    grantId: 'g2',
    userCode: null,
    uid: 'uid-a2',
    expiresAt,
  });
  const rows = await db()
    .selectFrom('oidc_payloads')
    .select(['id', 'payload', 'grant_id', 'user_code', 'uid', 'expires_at'])
    .orderBy('id')
    .execute();
  expect(rows).toEqual([
    { id: 'a', payload: { n: 3 }, grant_id: 'g2', user_code: null, uid: 'uid-a2', expires_at: expiresAt },
    { id: 'b', payload: { n: 2 }, grant_id: 'g', user_code: 'code', uid: null, expires_at: null },
  ]);
  expect((await findLiveOidcPayload(db(), 'Session', 'uid', 'uid-a2'))?.payload).toEqual({ n: 3 });
  expect(await findLiveOidcPayload(db(), 'Session', 'uid', 'uid-a')).toBeUndefined();
  expect((await findLiveOidcPayload(db(), 'Session', 'user_code', 'code'))?.payload).toEqual({ n: 2 });
});

test('a query whose text would depend on an argument is refused at its first call', () => {
  const lengthOf = prepared((d: Db, name: string) =>
    d
      .selectFrom('users')
      .select('id')
      .where('first_name', '=', name.length > 3 ? 'long' : 'short'),
  );
  expect(() => lengthOf(db(), 'anything')).toThrow(/an argument is not a parameter/);
});
