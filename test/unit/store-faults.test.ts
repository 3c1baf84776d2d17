import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { sql } from 'kysely';
import { createDb } from '../../platform/store/database';
import { StoreFaultsInterceptor } from '../../workers/store-faults';
import { TEST_ADMIN_URL } from '../support/scratch-store';

// Robustness issue, item 1: a store write of data PostgreSQL can never hold was retried without end.
const db = createDb(TEST_ADMIN_URL, 1);
afterAll(() => db.destroy());

const environment = () =>
  new MockActivityEnvironment({ attempt: 1 }, { interceptors: [() => ({ inbound: new StoreFaultsInterceptor() })] });

test("PostgreSQL's refusal of the data (a lone surrogate in jsonb, SQLSTATE class 22) ends the step as non-retryable, without the value", async () => {
  const write = () => sql`select ${JSON.stringify({ team: 'R\ud800D-secret' })}::jsonb`.execute(db);
  const failure = await environment()
    .run(write)
    .then(
      () => undefined,
      (error: unknown) => error,
    );
  expect(failure).toBeInstanceOf(ApplicationFailure);
  expect(failure).toMatchObject({ nonRetryable: true, type: 'StoreRefusedData' });
  expect((failure as Error).message).toMatch(/SQLSTATE 22P0[25]/);
  expect((failure as Error).message).not.toContain('secret');
});

test('a unique violation (a concurrent writer) and a lost connection stay retryable', async () => {
  for (const error of [
    Object.assign(new Error('duplicate key value violates unique constraint "users_pkey"'), { code: '23505' }),
    Object.assign(new Error('Connection terminated unexpectedly'), { code: undefined }),
  ]) {
    const failure = await environment()
      .run(() => Promise.reject(error))
      .catch((e: unknown) => e);
    expect(failure).toBe(error);
  }
});
