import type { KoaContextWithOIDC } from 'oidc-provider';
import { accessTokenShape } from '../../sign-in/oidc/token-shape';

const code = { authTime: 1_700_000_000, amr: ['external'], sid: 'session-1' };
const ctx = { oidc: { entities: { AuthorizationCode: code } } } as unknown as KoaContextWithOIDC;
const client = (settings: Record<string, unknown>, claims: Array<{ type: string; value: string }> = []) => ({
  metadata: () => ({ 'urn:identity-service:settings': settings, 'urn:identity-service:client-claims': claims }),
});
const jwt = () => ({
  payload: { aud: 'orders-api+billing-api', scope: 'orders.read billing.read', iat: 5 } as Record<string, unknown>,
});

test("Duende's default shape: scope as an array, every audience, nbf, the sign-in's auth_time, amr, idp and sid", async () => {
  const token = jwt();
  await accessTokenShape({ scopesAsString: false })(ctx, { accountId: 'u1', client: client({}) }, token);
  expect(token.payload).toEqual({
    aud: ['orders-api', 'billing-api'],
    scope: ['orders.read', 'billing.read'],
    iat: 5,
    nbf: 5,
    auth_time: 1_700_000_000,
    amr: ['external'],
    idp: 'external',
    sid: 'session-1',
  });
});

test('Oidc:EmitScopesAsSpaceDelimitedStringInJwt keeps the string; a client token has no sign-in claims', async () => {
  const token = jwt();
  await accessTokenShape({ scopesAsString: true })(
    ctx,
    { client: client({}, [{ type: 'tier', value: 'gold' }]) },
    token,
  );
  expect(token.payload.scope).toBe('orders.read billing.read');
  expect(token.payload).not.toHaveProperty('amr');
  expect(token.payload.client_tier).toBe('gold');
});
