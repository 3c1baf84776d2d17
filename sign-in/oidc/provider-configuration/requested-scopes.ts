import { errors } from 'oidc-provider';
import type { ScopeClaims } from '../claims';
import { allowedScopesOf } from '../provider-clients';
import type { ApiResources } from '../resources';

/** What tells a known scope from an unknown one: the scopes store and the API resources. */
export interface KnownScopes {
  scopes: ScopeClaims;
  apiResources: ApiResources;
}

/**
 * Duende IdentityServer refuses a request naming a scope it does not know (DefaultResourceValidator.ValidateScopeAsync:
 * "Scope {scope} not found in store" goes into InvalidScopes, which the authorize and token request validators answer
 * with `invalid_scope`); oidc-provider checks only the identity scopes it was configured with and drops any other
 * without a word. A scope is known here when it is an identity scope, a scope of the scopes store, one an API resource
 * serves, or one of the client's AllowedScopes. A known scope the client is not allowed is left to the narrowing it
 * had (resources.ts).
 */
export async function refuseUnknownScopes(
  known: KnownScopes,
  client: { metadata(): Record<string, unknown> } | undefined,
  requested: unknown,
): Promise<void> {
  if (typeof requested !== 'string' || !client) return;
  const allowed = new Set(allowedScopesOf(client));
  const { names, userClaims } = known.scopes;
  const unlisted = requested
    .split(' ')
    .filter((s) => s !== '' && !names.has(s) && !userClaims.has(s) && !allowed.has(s));
  if (unlisted.length === 0) return;
  const served = new Set([...(await known.apiResources()).values()].flat());
  const unknown = [...new Set(unlisted.filter((s) => !served.has(s)))];
  if (unknown.length > 0) throw new errors.InvalidScope(`unknown scope: ${unknown.join(' ')}`, unknown.join(' '));
}
