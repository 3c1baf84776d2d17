import { randomUUID } from 'node:crypto';
import { clientsWithRefreshTokensOf, upsertOidcPayload, withdrawAccessOf } from '../../platform/store/oidc-payloads';
import { storeCarriedOverGrant } from '../support/carried-grants';
import { useScratchStore } from '../support/scratch-store';

// "Remove access" on the account page, as Duende's grants page revokes (RemoveAllGrantsAsync for the subject and the
// client): everything one application holds for one user ends, and nothing of another application or another user.
// consent-browser.test.ts covers the page and the provider's refresh token; this covers what the migration carried.

const db = useScratchStore('ips_application_access');

const carried = (subject: string, client: string, type: string) =>
  storeCarriedOverGrant(db(), {
    subjectId: subject,
    clientId: client,
    type,
    createdAt: new Date(),
    expiresAt: new Date(Date.now() + 600_000),
    data: {},
  });

/** A grant of the provider's with one refresh token of it. */
async function issued(account: string, client: string, scope: string): Promise<void> {
  const grantId = randomUUID();
  const expiresAt = new Date(Date.now() + 600_000);
  const row = { userCode: null, uid: null, expiresAt };
  await upsertOidcPayload(db(), {
    ...row,
    model: 'Grant',
    id: grantId,
    grantId: null,
    payload: JSON.stringify({ accountId: account, clientId: client, openid: { scope } }),
  });
  await upsertOidcPayload(db(), {
    ...row,
    model: 'RefreshToken',
    id: randomUUID(),
    grantId,
    payload: JSON.stringify({ accountId: account, clientId: client, grantId, scope }),
  });
}

const left = async (subject: string) =>
  (await db().selectFrom('grants').select(['client_id', 'type']).where('subject_id', '=', subject).execute())
    .map((row) => `${row.client_id} ${row.type}`)
    .sort();

test("removing one application's access ends its grants, tokens and carried-over grants, and nothing else", async () => {
  const [user, other] = [randomUUID(), randomUUID()];
  await carried(user, 'shop', 'refresh_token');
  await carried(user, 'shop', 'reference_token');
  await carried(user, 'shop', 'user_consent');
  await carried(user, 'mail', 'refresh_token');
  await carried(other, 'shop', 'refresh_token');
  await issued(user, 'shop', 'openid orders offline_access');
  await issued(user, 'mail', 'openid inbox offline_access');
  await issued(other, 'shop', 'openid orders offline_access');

  const before = await clientsWithRefreshTokensOf(db(), user);
  expect(before.map((c) => c.clientId).sort()).toEqual(['mail', 'shop']);
  expect(before.find((c) => c.clientId === 'shop')!.scopes.sort()).toEqual(['offline_access', 'openid', 'orders']);

  // Three carried-over grants, the provider's grant and its refresh token.
  await expect(withdrawAccessOf(db(), user, 'shop')).resolves.toBe(5);
  expect((await clientsWithRefreshTokensOf(db(), user)).map((c) => c.clientId)).toEqual(['mail']);
  expect(await left(user)).toEqual(['mail refresh_token']);
  expect(await left(other)).toEqual(['shop refresh_token']);
  expect((await clientsWithRefreshTokensOf(db(), other)).map((c) => c.clientId)).toEqual(['shop']);
  // Done twice, nothing more ends.
  await expect(withdrawAccessOf(db(), user, 'shop')).resolves.toBe(0);
});
