import type { ServiceTokenCheck } from '../../platform/http/identity-admin';
import type { Db } from '../../platform/store/database';
import { adminTokenStanding } from '../store/admin-tokens';
import { verifyIssuedAccessToken } from '../oidc/issued-tokens';
import { ADMIN_RESOURCE } from '../oidc/resources';

const listOf = (value: unknown): unknown[] => (Array.isArray(value) ? value : value === undefined ? [] : [value]);

/**
 * Whether a bearer token is an access token this service issued for its admin API: one of its own (see
 * verifyIssuedAccessToken) with the IdentityAdmin audience and scope. The token only says whom it speaks for; the
 * store decides, at every request, whether that one is an administrator now: a user's token needs an active user who
 * holds the IdentityAdmin role through a role assignment (a `role` claim in the token counts for nothing), a client's
 * own token (client credentials) an enabled client still allowed the scope, and neither may have been revoked (or
 * ended by "sign out everywhere"): such a token is no longer valid, one without the right is valid but insufficient.
 */
export function serviceTokenCheck(db: Db, issuer: string): ServiceTokenCheck {
  return async (token) => {
    const claims = await verifyIssuedAccessToken(db, issuer, token);
    if (!claims) return { refused: 'invalid_token' };
    const lacking = { refused: 'insufficient_scope' } as const;
    if (!listOf(claims.aud).includes(ADMIN_RESOURCE)) return lacking;
    // Duende's shape: `scope` is a JSON array (or one string under Oidc:EmitScopesAsSpaceDelimitedStringInJwt).
    const scopes = typeof claims.scope === 'string' ? claims.scope.split(' ') : listOf(claims.scope);
    if (!scopes.includes(ADMIN_RESOURCE)) return lacking;
    const forUser = claims.sub !== undefined && claims.sub !== claims.client_id;
    if (forUser && typeof claims.sub !== 'string') return { refused: 'invalid_token' };
    const standing = await adminTokenStanding(
      db,
      {
        jti: claims.jti,
        clientId: claims.client_id,
        userId: forUser ? (claims.sub as string) : undefined,
        issuedAt: claims.iat,
      },
      ADMIN_RESOURCE,
    );
    if (standing === 'revoked') return { refused: 'invalid_token' };
    if (standing === 'lacks-right') return lacking;
    return { actor: forUser ? `user:${claims.sub as string}` : `client:${claims.client_id}` };
  };
}
