import { isForbiddenKey } from '../../platform/security/object-keys';
import { isReservedClaim, reservedClaimMessage } from '../../platform/security/reserved-claims';

/**
 * Claim folding for migrated users. Each folded claim type also arrives in its alternate namespace
 * (the WS-Federation form ASP.NET's ClaimTypes use); both fold the same way.
 */
const WS = 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/';

export const FOLDED_CLAIMS: Record<string, 'firstName' | 'lastName' | 'companyName' | 'organizationId'> = {
  given_name: 'firstName',
  [`${WS}givenname`]: 'firstName',
  family_name: 'lastName',
  [`${WS}surname`]: 'lastName',
  company: 'companyName',
  [`${WS}company`]: 'companyName',
  org_id: 'organizationId',
  [`${WS}org_id`]: 'organizationId',
};

/** E-mail lives on the user record; e-mail claims would only duplicate it. */
export const DROPPED_CLAIMS = new Set(['email', 'email_verified', `${WS}emailaddress`]);

export interface FoldedClaims {
  firstName: string | null;
  lastName: string | null;
  companyName: string | null;
  organizationId: string | null;
  customAttributes: Record<string, string>;
}

export const noClaims = (): FoldedClaims => ({
  firstName: null,
  lastName: null,
  companyName: null,
  organizationId: null,
  customAttributes: {},
});

/** Folds a page's claim rows per user as they come, without gathering each user's claims first. */
export function foldClaimsByUser(
  claims: ReadonlyArray<{ UserId: string; ClaimType: string | null; ClaimValue: string | null }>,
  warn: (message: string) => void = () => {},
): Map<string, FoldedClaims> {
  const byUser = new Map<string, FoldedClaims>();
  for (const { UserId: userId, ClaimType: type, ClaimValue: value } of claims) {
    if (!type || value === null) continue;
    if (isForbiddenKey(type)) {
      warn(`user ${userId} has a claim of type "${type}", a name no attribute may have; it was not migrated`);
      continue;
    }
    let folded = byUser.get(userId);
    if (!folded) byUser.set(userId, (folded = noClaims()));
    const target = FOLDED_CLAIMS[type] ?? FOLDED_CLAIMS[type.toLowerCase()];
    if (target) folded[target] ??= value;
    else if (DROPPED_CLAIMS.has(type.toLowerCase())) continue;
    else if (isReservedClaim(type))
      warn(`user ${userId} has a claim of type "${type}": ${reservedClaimMessage(type)}; it was not migrated`);
    else {
      // A claim type given more than once keeps every value, comma-separated.
      folded.customAttributes[type] =
        folded.customAttributes[type] === undefined ? value : `${folded.customAttributes[type]},${value}`;
    }
  }
  return byUser;
}
