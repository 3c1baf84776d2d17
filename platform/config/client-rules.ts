/**
 * Which IdentityServer client configurations the service can honour: the admin API refuses the others, the migration
 * reports them, and the provider's client metadata leaves out what they ask for.
 */

/** The grant types the service offers; IdentityServer's others are named by the migration's dry-run report. */
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';
/**
 * The resource-owner password grant: served to the clients that had it at IdentityServer (migrated), so their apps
 * keep working, and never given to a new client (the OAuth 2.0 Security BCP forbids it).
 */
export const PASSWORD_GRANT = 'password';
export const OFFERED_GRANT_TYPES = [
  'authorization_code',
  'client_credentials',
  DEVICE_CODE_GRANT,
  PASSWORD_GRANT,
] as const;

/** The grant types a client may not be given through the admin API unless it has them already (a migrated one). */
export const KEPT_ONLY_GRANT_TYPES = [PASSWORD_GRANT] as const;

/**
 * The grant types only a client that authenticates may use: without a secret, client credentials would mint tokens
 * for its scopes without proving anything, and the resource-owner password grant would try passwords for anyone
 * holding the client id. IdentityServer's client validation refuses the first shape; the second is refused alike,
 * as the OAuth 2.0 Security BCP (RFC 9700 §2.4) allows the password grant, if at all, only to a confidential client.
 */
export const SECRET_ONLY_GRANT_TYPES = ['client_credentials', PASSWORD_GRANT] as const;

/** What is wrong with a client that has no secret but a grant only a client with one may use. */
export function publicClientGrantProblem(client: { RequireClientSecret?: boolean; AllowedGrantTypes: string[] }) {
  if (client.RequireClientSecret !== false) return undefined;
  const needing = SECRET_ONLY_GRANT_TYPES.filter((g) => client.AllowedGrantTypes.includes(g));
  if (needing.length === 0) return undefined;
  return `${needing.join(' and ')} ${needing.length > 1 ? 'need' : 'needs'} a client secret: a client with RequireClientSecret false cannot use ${needing.length > 1 ? 'them' : 'it'}`;
}

/** The grant types of a client the service does not offer (resource-owner password, implicit, hybrid, device…). */
export const unofferedGrantTypes = (grantTypes: string[]) =>
  grantTypes.filter((g) => !(OFFERED_GRANT_TYPES as readonly string[]).includes(g));

/** A back-channel logout URI the service can post to: an absolute http(s) address (others are reported). */
export const isBackChannelLogoutUri = (value: unknown): value is string =>
  typeof value === 'string' && URL.canParse(value) && ['http:', 'https:'].includes(new URL(value).protocol);

/** An IdentityServer client setting the service does not honour, as the cutover report names it. */
export interface UnsupportedSetting {
  setting: string;
  value: unknown;
  /** What the client will notice after the cutover. */
  effect: string;
}

const present = (value: unknown) => value !== undefined && value !== null && value !== '' && value !== false;

/**
 * Each IdentityServer client setting the service does not act on, when the client sets it to something that would
 * change its behaviour (Duende IdentityServer 6/7's Client model): one table for the client API and the migration.
 */
const UNSUPPORTED: Array<{ setting: string; applies: (value: unknown) => boolean; effect: string }> = [
  {
    setting: 'FrontChannelLogoutUri',
    applies: present,
    effect: 'front-channel logout is not offered: the client is not told in the browser when the user signs out',
  },
  {
    setting: 'BackChannelLogoutUri',
    applies: (v) => present(v) && !isBackChannelLogoutUri(v),
    effect:
      'not an absolute http or https address: no logout token is sent, so the client is not told when the user signs out',
  },
  {
    setting: 'RequireRequestObject',
    applies: (v) => v === true,
    effect: 'request objects are not supported; authorization requests without one are accepted',
  },
  {
    setting: 'AllowedIdentityTokenSigningAlgorithms',
    applies: (v) =>
      present(v) &&
      String(v)
        .split(/[\s,]+/)
        .some((alg) => alg && alg !== 'RS256'),
    effect: 'ID tokens are signed with RS256 only',
  },
  {
    setting: 'AllowPlainTextPkce',
    applies: (v) => v === true,
    effect: 'PKCE takes S256 only: a client sending plain code challenges is refused',
  },
  {
    setting: 'RequireDPoP',
    applies: (v) => v === true,
    effect: 'DPoP is not supported: tokens are bearer tokens, not bound to a key',
  },
  {
    setting: 'RequirePushedAuthorization',
    applies: (v) => v === true,
    effect: 'pushed authorization requests are not offered; plain authorization requests are accepted',
  },
  {
    setting: 'EnableLocalLogin',
    applies: (v) => v === false,
    effect: 'the sign-in pages always offer the password; the client cannot restrict them to external providers',
  },
  {
    setting: 'PairWiseSubjectSalt',
    applies: present,
    effect: 'subjects are public (the user id), not pairwise per client',
  },
  {
    setting: 'UserSsoLifetime',
    applies: present,
    effect: 'the single sign-on session lasts 14 days whatever the client asks',
  },
  {
    setting: 'CoordinateLifetimeWithUserSession',
    applies: (v) => v === true,
    effect: "refresh tokens do not end with the user's session",
  },
  {
    setting: 'ProtocolType',
    applies: (v) => present(v) && v !== 'oidc',
    effect: 'only OpenID Connect is served for clients',
  },
];

/** The settings of a client the service will not honour after the cutover, with what the client will notice. */
export function unsupportedSettingsOf(settings: Record<string, unknown>, grantTypes: string[]): UnsupportedSetting[] {
  const found = UNSUPPORTED.filter((rule) => rule.applies(settings[rule.setting])).map((rule) => ({
    setting: rule.setting,
    value: settings[rule.setting],
    effect: rule.effect,
  }));
  const unoffered = unofferedGrantTypes(grantTypes);
  if (unoffered.length > 0)
    found.push({
      setting: 'AllowedGrantTypes',
      value: unoffered,
      effect: `requests with ${unoffered.join(', ')} are refused (unsupported_grant_type or unsupported_response_type)`,
    });
  return found;
}
