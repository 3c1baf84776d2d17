import type { Db } from '../../platform/store/database';
import { findClaimsUser, listScopes, type ClaimsUser } from '../store/sign-in-users';
import { isForbiddenKey } from '../../platform/security/object-keys';
import { isReservedClaim } from '../../platform/security/reserved-claims';

/**
 * Claims of the openid scope, so of every token of a user: the subject, the organization, the roles, and how the user
 * signed in (amr says whether a second factor was used; idp, as Duende IdentityServer names it, where: `local` or
 * `external`; sid, the session).
 */
const ALWAYS = ['sub', 'org_id', 'role', 'auth_time', 'amr', 'acr', 'idp', 'sid'];

/** What the scopes store says about claims, read at start (a scope added later takes effect at the next start). */
export interface ScopeClaims {
  /** The identity scopes, as oidc-provider's `scopes`. */
  names: Set<string>;
  /** Identity scope → the claims it releases, as oidc-provider's `claims`. */
  claimsByScope: Record<string, string[]>;
  /** Every scope's UserClaims, API scopes included (access-token claims). */
  userClaims: Map<string, string[]>;
  /** What discovery lists as scopes_supported, as IdentityServer does: the scopes marked ShowInDiscoveryDocument. */
  discoveryScopes: string[];
}

/**
 * The claims of OpenID Connect's standard scopes (Core §5.4), for a standard identity scope whose IdentityResource
 * lists none (IdentityServer's own IdentityResources.Profile() carries them in code, not in the database).
 */
const STANDARD_SCOPE_CLAIMS = new Map<string, string[]>([
  [
    'profile',
    [
      'name',
      'family_name',
      'given_name',
      'middle_name',
      'nickname',
      'preferred_username',
      'profile',
      'picture',
      'website',
      'gender',
      'birthdate',
      'zoneinfo',
      'locale',
      'updated_at',
    ],
  ],
  ['email', ['email', 'email_verified']],
  ['address', ['address']],
  ['phone', ['phone_number', 'phone_number_verified']],
]);

export async function loadScopeClaims(db: Db): Promise<ScopeClaims> {
  const rows = await listScopes(db);
  const identity = rows.filter((r) => r.kind === 'identity');
  const claimsByScope: Record<string, string[]> = Object.create(null) as Record<string, string[]>;
  for (const scope of identity) {
    const listed = scope.user_claims.filter((c) => !isForbiddenKey(c));
    claimsByScope[scope.name] = listed.length > 0 ? listed : (STANDARD_SCOPE_CLAIMS.get(scope.name) ?? []);
  }
  claimsByScope.openid = [...new Set([...(claimsByScope.openid ?? []), ...ALWAYS])];
  return {
    names: new Set(['openid', 'offline_access', ...identity.map((r) => r.name)]),
    claimsByScope,
    userClaims: new Map(rows.map((r) => [r.name, r.user_claims])),
    discoveryScopes: [
      'openid',
      'offline_access',
      ...rows
        .filter((r) => r.show_in_discovery && r.name !== 'openid' && r.name !== 'offline_access')
        .map((r) => r.name),
    ],
  };
}

/**
 * Every claim the user has; oidc-provider releases those the granted scopes name. A custom attribute never takes the
 * place of a reserved claim (security/reserved-claims.ts: one stored before that rule is passed over), and one named
 * like a prototype key is never a claim.
 */
function allClaims(user: ClaimsUser): Record<string, unknown> {
  const claims: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
  for (const [name, value] of Object.entries(user.custom_attributes ?? {}))
    if (!isForbiddenKey(name) && !isReservedClaim(name)) claims[name] = value;
  Object.assign(claims, {
    sub: user.id,
    email: user.email,
    email_verified: user.email_confirmed,
    ...(user.first_name ? { given_name: user.first_name } : {}),
    ...(user.last_name ? { family_name: user.last_name } : {}),
    ...(user.first_name || user.last_name ? { name: [user.first_name, user.last_name].filter(Boolean).join(' ') } : {}),
    ...(user.organization_id ? { org_id: user.organization_id } : {}),
    ...(user.roles.length > 0 ? { role: user.roles.length === 1 ? user.roles[0] : user.roles } : {}),
  });
  return claims;
}

/** The account behind a subject: an active user, or undefined (a deactivated user has no account). */
export async function claimsOf(db: Db, sub: string) {
  const user = await findClaimsUser(db, sub);
  return (
    user && {
      claims: () => ({ ...allClaims(user), sub: user.id }),
      /** ASP.NET Identity's SecurityStamp: new whenever the user's sessions end (endSignInsIn). */
      securityStamp: user.security_stamp,
    }
  );
}

/**
 * Claims a JWT access token for an API carries besides the protocol's own: the organization, and every user claim the
 * token's scopes name in their UserClaims (custom attributes surface this way, as the spec says), the roles included.
 */
export async function tokenClaimsOf(
  db: Db,
  token: { accountId?: string; scope?: string; kind?: string },
  scopes: ScopeClaims,
): Promise<Record<string, unknown> | undefined> {
  if (!token.accountId) return undefined;
  const user = await findClaimsUser(db, token.accountId);
  if (!user) return undefined;
  const claims = allClaims(user);
  const wanted = new Set(['org_id', ...(token.scope ?? '').split(' ').flatMap((s) => scopes.userClaims.get(s) ?? [])]);
  wanted.delete('sub');
  return Object.fromEntries([...wanted].filter((name) => claims[name] !== undefined).map((n) => [n, claims[n]]));
}
