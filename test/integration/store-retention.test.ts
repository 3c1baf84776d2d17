import { sql } from 'kysely';
import {
  claimIdempotencyKey,
  IDEMPOTENCY_KEY_HOURS,
  purgeExpiredIdempotencyKeys,
} from '../../platform/store/idempotency-keys';
import {
  ABANDONED_AFTER_HOURS,
  purgeAbandonedCredentials,
  stashPasswordHash,
} from '../../provisioning/store/pending-credentials';
import { purgeRevokedAccessTokens, revokeAccessToken } from '../../sign-in/store/admin-tokens';
import { useScratchStore } from '../support/scratch-store';
import { countHit, purgeExpiredHits } from '../../platform/store/rate-limits';

/** Rows kept for a while after they were written go once their retention has passed, and not before. */
const db = useScratchStore('ips_retention');

/** Moves a row's created_at back by `hours` and a minute. */
const age = (table: 'pending_credentials' | 'idempotency_keys', column: 'id' | 'key', value: string, hours: number) =>
  db()
    .updateTable(table)
    .set({ created_at: sql<Date>`now() - make_interval(hours => ${hours}, mins => 1)` })
    .where(column, '=', value)
    .execute();

test(`a stashed password hash is purged as abandoned after ${ABANDONED_AFTER_HOURS} h`, async () => {
  const old = await stashPasswordHash(db(), 'old-hash');
  const recent = await stashPasswordHash(db(), 'recent-hash');
  await age('pending_credentials', 'id', old, ABANDONED_AFTER_HOURS);
  expect(await purgeAbandonedCredentials(db())).toBe(1);
  const left = (await db().selectFrom('pending_credentials').select('id').execute()).map((r) => r.id);
  expect(left).toContain(recent);
  expect(left).not.toContain(old);
});

test(`an Idempotency-Key is purged after ${IDEMPOTENCY_KEY_HOURS} h`, async () => {
  await claimIdempotencyKey(db(), 'scope', 'old-key', 'f');
  await claimIdempotencyKey(db(), 'scope', 'recent-key', 'f');
  await age('idempotency_keys', 'key', 'old-key', IDEMPOTENCY_KEY_HOURS);
  expect(await purgeExpiredIdempotencyKeys(db())).toBe(1);
  const left = (await db().selectFrom('idempotency_keys').select('key').execute()).map((r) => r.key);
  expect(left).toEqual(['recent-key']);
});

test('a revoked access token is forgotten once it would have expired anyway, and not before', async () => {
  await revokeAccessToken(db(), 'expired-jti', new Date(Date.now() - 60_000));
  await revokeAccessToken(db(), 'live-jti', new Date(Date.now() + 3_600_000));
  await revokeAccessToken(db(), 'live-jti', new Date(Date.now() + 3_600_000));
  await purgeRevokedAccessTokens(db());
  const left = (await db().selectFrom('revoked_access_tokens').select('jti').execute()).map((r) => r.jti);
  expect(left).toEqual(['live-jti']);
});

test('a counted request is purged once its window has passed, and not before', async () => {
  await countHit(db(), 'registration:address', 'old', 1);
  await countHit(db(), 'registration:address', 'recent', 3600);
  await db()
    .updateTable('rate_limit_hits')
    .set({ expires_at: sql<Date>`now() - interval '1 second'` })
    .where('key', '=', 'old')
    .execute();
  expect(await purgeExpiredHits(db())).toBe(1);
  const left = (await db().selectFrom('rate_limit_hits').select('key').execute()).map((r) => r.key);
  expect(left).toEqual(['recent']);
});
