import * as oidc from 'openid-client';
import { clientsWithRefreshTokensOf, endEverySignInOf, withdrawAccessOf } from '../../platform/store/oidc-payloads';
import { createUserWith, SIGN_IN_HARNESS, useHarness } from '../support/harness';
import { relyingParty } from '../support/relying-party';
import { storeCarriedOverGrant } from '../support/carried-grants';

// A refresh token the migration carried over is adopted at its first use: taken (marked consumed), then written as the
// provider's Grant and RefreshToken. An end of the user's access that runs between the two ("Remove access" on
// /account, "sign out everywhere") found nothing of the provider's to delete, and the token written after it lived
// on. Each end takes the user's row first, and the adoption, once written, checks under a share of that row that its
// token still stands. Bounded parallel loops: the end fired at several moments of the adoption.
const h = useHarness(SIGN_IN_HARNESS);
const CALLBACK = 'https://shop.example.com/callback';
const PASSWORD = 'correct horse battery 9';
const SECRET = 'race-shop-secret-16!';

beforeAll(async () => {
  const put = await h.admin('PUT', '/api/v1/clients/race-shop', {
    AllowedGrantTypes: ['authorization_code'],
    RedirectUris: [CALLBACK],
    AllowedScopes: ['openid', 'profile'],
    AllowOfflineAccess: true,
    ClientSecrets: [{ Value: SECRET }],
  });
  expect(put.status).toBe(201);
});

/** As the migration's refresh-tokens pass writes a source fork's token. */
const carriedOverToken = (userId: string) =>
  storeCarriedOverGrant(h.context.db, {
    subjectId: userId,
    clientId: 'race-shop',
    createdAt: new Date(Date.now() - 3600_000),
    expiresAt: new Date(Date.now() + 3600_000),
    data: { scope: 'openid offline_access' },
  });

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test.each([
  ['"Remove access"', (userId: string): Promise<unknown> => withdrawAccessOf(h.context.db, userId, 'race-shop')],
  ['"sign out everywhere"', (userId: string): Promise<unknown> => endEverySignInOf(h.context.db, userId)],
])(
  '%s racing the adoption of a carried-over refresh token leaves no token that works',
  async (label, end) => {
    const rp = await relyingParty(h.api.publicUrl, 'race-shop', SECRET);
    for (const delayMs of [0, 1, 2, 3, 4, 6, 8, 12]) {
      const user = await createUserWith(h, `race-${label.length}-${delayMs}`, PASSWORD);
      const handle = await carriedOverToken(user.id);
      const [refreshed] = await Promise.allSettled([
        oidc.refreshTokenGrant(rp, handle),
        pause(delayMs).then(() => end(user.id)),
      ]);
      // Whichever came first, nothing of the client's refresh tokens is left, and no token the refresh answered works.
      expect(await clientsWithRefreshTokensOf(h.context.db, user.id)).toEqual([]);
      if (refreshed.status === 'fulfilled')
        await expect(oidc.refreshTokenGrant(rp, refreshed.value.refresh_token!)).rejects.toMatchObject({
          error: 'invalid_grant',
        });
    }
  },
  60_000,
);
