/**
 * The one table of migration passes, in report order. Workflow-safe (no imports): the run workflow derives its order
 * from it, the activities their implementations (keyed by name) and the tests their list.
 *
 * - `after`: the passes whose rows this one needs; a pass starts when they have ended, and passes that need nothing
 *   of each other run side by side (SAML before OIDC, so the owner of a domain both list is always the same).
 * - `keyedByUser`: pages through source users, so it runs as several key ranges side by side.
 * - `ofCreatedUsers`: reads the rows of users this run created (their roles, logins, MFA). These start once every
 *   other pass has ended; under CreateOnly, a run that created no user (a sweep of an unchanged source) skips them.
 */
export const PASS_PLAN = [
  { name: 'roles', after: [], keyedByUser: false, ofCreatedUsers: false },
  { name: 'users', after: ['roles'], keyedByUser: true, ofCreatedUsers: false },
  { name: 'user-roles', after: ['users'], keyedByUser: true, ofCreatedUsers: true },
  { name: 'logins', after: ['users'], keyedByUser: true, ofCreatedUsers: true },
  { name: 'mfa', after: ['users'], keyedByUser: true, ofCreatedUsers: true },
  { name: 'scopes', after: [], keyedByUser: false, ofCreatedUsers: false },
  { name: 'clients', after: [], keyedByUser: false, ofCreatedUsers: false },
  { name: 'saml-providers', after: [], keyedByUser: false, ofCreatedUsers: false },
  { name: 'oidc-providers', after: ['saml-providers'], keyedByUser: false, ofCreatedUsers: false },
  { name: 'refresh-tokens', after: [], keyedByUser: false, ofCreatedUsers: false },
  { name: 'signing-keys', after: [], keyedByUser: false, ofCreatedUsers: false },
] as const satisfies ReadonlyArray<{
  name: string;
  after: readonly string[];
  keyedByUser: boolean;
  ofCreatedUsers: boolean;
}>;

export type PassName = (typeof PASS_PLAN)[number]['name'];
export type PlannedPass = (typeof PASS_PLAN)[number];

export const PASSES: readonly PassName[] = PASS_PLAN.map((p) => p.name);

export const planOf = (name: PassName): PlannedPass => PASS_PLAN.find((p) => p.name === name)!;
