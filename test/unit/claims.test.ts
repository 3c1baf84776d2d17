import { foldClaimsByUser } from '../../migration/activities/claim-folding';

const WS = 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/';
const claim = (UserId: string, ClaimType: string | null, ClaimValue: string | null) => ({
  UserId,
  ClaimType,
  ClaimValue,
});

/** One user's claims, type and value, folded; and the warnings the fold gave. */
function foldReporting(userId: string, claims: Record<string, string>) {
  const warnings: string[] = [];
  const rows = Object.entries(claims).map(([type, value]) => claim(userId, type, value));
  return { folded: foldClaimsByUser(rows, (w) => warnings.push(w)), warnings };
}

describe('claim folding', () => {
  test('both namespaces fold into the profile fields; the first value of a field wins', () => {
    const folded = foldClaimsByUser([
      claim('u1', `${WS}givenname`, 'Ada'),
      claim('u1', 'given_name', 'Later'),
      claim('u1', 'family_name', 'Lovelace'),
      claim('u1', `${WS}company`, 'Engines Ltd'),
      claim('u1', `${WS}org_id`, 'org-1'),
    ]);
    expect(folded.get('u1')).toEqual({
      firstName: 'Ada',
      lastName: 'Lovelace',
      companyName: 'Engines Ltd',
      organizationId: 'org-1',
      customAttributes: {},
    });
  });

  // The source query leaves out the exact spellings of the dropped types; other casings reach the fold and must go too.
  test('e-mail claims are dropped whatever their casing', () => {
    const folded = foldClaimsByUser([
      claim('u1', 'Email', 'a@example.test'),
      claim('u1', 'EMAIL_VERIFIED', 'true'),
      claim('u1', `${WS}EmailAddress`, 'a@example.test'),
    ]);
    expect(folded.get('u1')?.customAttributes).toEqual({});
  });

  test('other claims become custom attributes, a repeated type keeping every value; claims without type or value are ignored', () => {
    const folded = foldClaimsByUser([
      claim('u1', 'department', 'R&D'),
      claim('u1', 'department', 'Ops'),
      claim('u2', 'team', 'x'),
      claim('u2', null, 'v'),
      claim('u2', 'cost', null),
    ]);
    expect(folded.get('u1')?.customAttributes).toEqual({ department: 'R&D,Ops' });
    expect(folded.get('u2')?.customAttributes).toEqual({ team: 'x' });
  });

  // Roles come from AspNetUserRoles only: a role claim (or any other name the service sets itself) in
  // AspNetUserClaims would otherwise surface in tokens as a privilege.
  test('claims with reserved names are not migrated, whatever their casing or namespace, each with a warning', () => {
    const { folded, warnings } = foldReporting('u1', {
      role: 'IdentityAdmin',
      'http://schemas.microsoft.com/ws/2008/06/identity/claims/role': 'IdentityAdmin',
      AMR: 'mfa',
      sub: 'someone-else',
      idp: 'corp',
      team: 'blue',
    });
    expect(folded.get('u1')?.customAttributes).toEqual({ team: 'blue' });
    expect(warnings).toHaveLength(5);
    expect(warnings[0]).toMatch(/user u1 has a claim of type "role": .*not migrated/);
  });
});

test('a claim type named like a prototype key is not migrated and is reported', () => {
  // JSON.parse keeps `__proto__` as a key of its own, as a claim row would carry it.
  const { folded, warnings } = foldReporting(
    'u1',
    JSON.parse('{"__proto__": "x", "constructor": "y", "Prototype": "z", "team": "t"}') as Record<string, string>,
  );
  expect(folded.get('u1')?.customAttributes).toEqual({ team: 't' });
  expect(Object.getPrototypeOf(folded.get('u1')!.customAttributes)).toBe(Object.prototype);
  expect(warnings).toEqual([
    'user u1 has a claim of type "__proto__", a name no attribute may have; it was not migrated',
    'user u1 has a claim of type "constructor", a name no attribute may have; it was not migrated',
    'user u1 has a claim of type "Prototype", a name no attribute may have; it was not migrated',
  ]);
});
