/**
 * Claim names only the service itself sets: protocol claims, the user record's own fields, and roles (which come
 * from role assignments alone). A custom attribute with one of these names would let whoever writes attributes
 * (a provisioning app's Try answer, a SCIM client, a migrated claim) forge an identity or a privilege, so such an
 * attribute is refused at the API and dropped with a warning where it comes from an app or the source. `org_id` is
 * set by `organizationId` only, as the spec says. Compared without regard to case, and the WS-Federation claim URIs
 * ASP.NET Identity uses for the same facts count as the short names. So do the short names .NET's JWT handler
 * (System.IdentityModel.Tokens.Jwt, `JwtSecurityTokenHandler.DefaultInboundClaimTypeMap`) maps onto those claim URIs,
 * since an API reading the token through it sees `nameid` as the user's id, `unique_name` as the name and `scp` as
 * the scope, and `upn` and `groups` as who the user is and which groups hold them.
 */
export const RESERVED_CLAIMS: ReadonlySet<string> = new Set([
  'sub',
  'role',
  'roles',
  'amr',
  'acr',
  'auth_time',
  'idp',
  'sid',
  'iss',
  'aud',
  'exp',
  'iat',
  'nbf',
  'jti',
  'azp',
  'nonce',
  'at_hash',
  'c_hash',
  'cnf',
  'client_id',
  'scope',
  'email',
  'email_verified',
  'name',
  'given_name',
  'family_name',
  'org_id',
  'nameid',
  'unique_name',
  'upn',
  'scp',
  'groups',
  // Microsoft.Identity.Web reads these as who the user is (object and tenant id), as does the JWT handler's map
  // (`prn`, `primarysid`, `actort`: principal, security identifier, actor).
  'oid',
  'tid',
  'prn',
  'primarysid',
  'actort',
]);

/** ASP.NET Identity's claim URIs for facts the short names above already carry (lower case: compared folded). */
const RESERVED_CLAIM_URIS: ReadonlySet<string> = new Set([
  'http://schemas.microsoft.com/ws/2008/06/identity/claims/role',
  'http://schemas.microsoft.com/ws/2008/06/identity/claims/authenticationmethod',
  'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/nameidentifier',
  'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name',
  'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress',
  'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/givenname',
  'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/surname',
  'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/upn',
  'http://schemas.xmlsoap.org/claims/group',
  'http://schemas.microsoft.com/identity/claims/scope',
  'http://schemas.microsoft.com/identity/claims/objectidentifier',
  'http://schemas.microsoft.com/identity/claims/tenantid',
  'http://schemas.microsoft.com/ws/2008/06/identity/claims/primarysid',
  'http://schemas.xmlsoap.org/ws/2009/09/identity/claims/actor',
]);

export const isReservedClaim = (name: string): boolean => {
  const folded = name.trim().toLowerCase();
  return RESERVED_CLAIMS.has(folded) || RESERVED_CLAIM_URIS.has(folded);
};

export const reservedClaimMessage = (name: string) =>
  `"${name}" is a claim name the service sets itself (roles come from role assignments, org_id from organizationId); a custom attribute cannot use it`;
