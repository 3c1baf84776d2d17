import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { recordProvisions } from '../../platform/store/provisions';
import { deactivateUserReturningApps } from '../../platform/store/user-removals';
import { purgeOldRemovals, REMOVALS_KEPT_DAYS } from '../../platform/store/user-removals';
import { deleteUserReturningApps, insertUser } from '../../platform/store/users';
import { newUserFrom } from '../../provisioning/creation';
import { useScratchStore } from '../support/scratch-store';

/**
 * A removal step run again (the replay after a lost worker) finds the user gone or its provision records removed;
 * under its removal key it answers what the first run found, so the apps are still told.
 */
const db = useScratchStore('ips_removals');

async function provisionedUser(): Promise<string> {
  const userId = randomUUID();
  await insertUser(db(), { userId, ...newUserFrom({ email: `${userId}@example.test` }) }, null);
  await recordProvisions(db(), { userId, appIds: ['crm', 'wiki'], transactionId: 't' });
  return userId;
}

test('a deletion run twice under one key answers the same both times; under none, the second finds nothing', async () => {
  const userId = await provisionedUser();
  const first = await deleteUserReturningApps(db(), userId, `deletion:${userId}@run`);
  expect(first).toEqual({ deleted: true, appIds: ['crm', 'wiki'], signOuts: [] });
  expect(await deleteUserReturningApps(db(), userId, `deletion:${userId}@run`)).toEqual(first);
  expect(await deleteUserReturningApps(db(), userId, `deletion:${userId}@another-run`)).toEqual({
    deleted: false,
    appIds: [],
    signOuts: [],
  });
  expect(await deleteUserReturningApps(db(), userId)).toEqual({ deleted: false, appIds: [], signOuts: [] });
});

test('a deactivation run twice under one key answers the apps it took the user from both times', async () => {
  const userId = await provisionedUser();
  const first = await deactivateUserReturningApps(db(), userId, `deactivation:${userId}@run`);
  expect(first).toEqual({
    found: true,
    appIds: expect.arrayContaining(['crm', 'wiki']) as string[],
    signOuts: [],
  });
  expect(await deactivateUserReturningApps(db(), userId, `deactivation:${userId}@run`)).toEqual(first);
  expect(await deactivateUserReturningApps(db(), userId, `deactivation:${userId}@later`)).toEqual({
    found: true,
    appIds: [],
    signOuts: [],
  });
});

test('two runs under one key at the same time: one removes, both answer what it found', async () => {
  const userId = await provisionedUser();
  const answers = await Promise.all([
    deleteUserReturningApps(db(), userId, `deletion:${userId}@overlap`),
    deleteUserReturningApps(db(), userId, `deletion:${userId}@overlap`),
  ]);
  expect(answers).toEqual([
    { deleted: true, appIds: ['crm', 'wiki'], signOuts: [] },
    { deleted: true, appIds: ['crm', 'wiki'], signOuts: [] },
  ]);
});

test(`answers are kept ${REMOVALS_KEPT_DAYS} days, then purged`, async () => {
  const userId = await provisionedUser();
  await deleteUserReturningApps(db(), userId, `deletion:${userId}@old`);
  await deleteUserReturningApps(db(), randomUUID(), `deletion:recent`);
  await db()
    .updateTable('user_removals')
    .set({ created_at: sql<Date>`now() - make_interval(days => ${REMOVALS_KEPT_DAYS}, hours => 1)` })
    .where('removal_id', '=', `deletion:${userId}@old`)
    .execute();
  expect(await purgeOldRemovals(db())).toBe(1);
  const left = await db().selectFrom('user_removals').select('removal_id').execute();
  expect(left.map((r) => r.removal_id)).toContain('deletion:recent');
  expect(left.map((r) => r.removal_id)).not.toContain(`deletion:${userId}@old`);
});
