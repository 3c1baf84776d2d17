/**
 * Every path of sign-in, in one table: the provider's endpoints (IdentityServer's, so clients and backends-for-frontends
 * only change their authority URL), the sign-in and account pages, and federation's callback and SAML endpoints. The
 * composition root routes by it, the edge takes form posts on it, metrics label by it.
 */
export const OIDC_ROUTES = {
  authorization: '/connect/authorize',
  token: '/connect/token',
  userinfo: '/connect/userinfo',
  end_session: '/connect/endsession',
  revocation: '/connect/revocation',
  introspection: '/connect/introspect',
  device_authorization: '/connect/deviceauthorization',
  // Where a person enters a device's user code (IdentityServer's default path).
  code_verification: '/device',
  jwks: '/.well-known/openid-configuration/jwks',
} as const;

export const DISCOVERY_PATH = '/.well-known/openid-configuration';
export const INTERACTION_PREFIX = '/interaction/';
export const ACCOUNT_PREFIX = '/account/';
/** The account page itself, and everything under it. */
export const isAccountPath = (path: string) => path === '/account' || path.startsWith(ACCOUNT_PREFIX);
export const FEDERATION_CALLBACK_PATH = '/oidc/callback';
/**
 * The way back from and out of the operators' pages' sign-in (oidc/admin-pages.ts); the pages themselves (the cutover
 * dashboard) are given to sign-in by the composition root, under /admin/.
 */
export const ADMIN_PAGES = { signedIn: '/admin/signed-in', signOut: '/admin/sign-out' } as const;
export const isAdminPagePath = (path: string) => (Object.values(ADMIN_PAGES) as string[]).includes(path);
export const SAML_PREFIX = '/saml/';

/** Whether a request path belongs to the provider (its routes, discovery, and the end-session confirmation pages). */
export const isProviderPath = (path: string) =>
  path.startsWith('/connect/') ||
  path === OIDC_ROUTES.code_verification ||
  path.startsWith(`${OIDC_ROUTES.code_verification}/`) ||
  path === DISCOVERY_PATH ||
  path.startsWith(OIDC_ROUTES.jwks);

const CANONICAL_PROVIDER_PATHS = new Map(
  [...Object.values(OIDC_ROUTES), DISCOVERY_PATH].map((route) => [route.toLowerCase(), route]),
);

/**
 * A provider request's URL with its path spelled as the route table spells it. oidc-provider's router folds case and
 * drops one trailing slash (`/device/`, `/connect/Revocation`), so without this the service's own steps in front of a
 * route (the user-code budget, JWT revocation, introspection's audiences, offline consent), which match the path as
 * written here, would not see a request the provider still serves.
 */
export function inCanonicalForm(url: string): string {
  const query = url.indexOf('?');
  const path = query < 0 ? url : url.slice(0, query);
  const canonical = CANONICAL_PROVIDER_PATHS.get(path.toLowerCase().replace(/(.)\/$/, '$1'));
  return canonical === undefined ? url : `${canonical}${query < 0 ? '' : url.slice(query)}`;
}

/** The paths federation answers: the OIDC callback and each SAML provider's ACS and metadata. */
export const isFederationPath = (path: string) => path === FEDERATION_CALLBACK_PATH || path.startsWith(SAML_PREFIX);

/** Every path of sign-in: they take form posts, not JSON. */
export const isSignInPath = (path: string) =>
  isProviderPath(path) ||
  path.startsWith(DISCOVERY_PATH) ||
  path.startsWith(INTERACTION_PREFIX) ||
  isAccountPath(path) ||
  isFederationPath(path);
