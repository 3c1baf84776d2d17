import { errors, type KoaContextWithOIDC } from 'oidc-provider';
import type { ScopeClaims } from '../claims';
import { allowedScopesOf } from '../provider-clients';
import type { ApiResources } from '../resources';
import { settingsOfClient } from './ttl';

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
async function refuseUnknownScopes(
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

/**
 * Duende IdentityServer refuses `offline_access` from a client without AllowOfflineAccess (DefaultResourceValidator:
 * it goes into InvalidScopes, answered with `invalid_scope`); oidc-provider drops it without a word (checkScope: the
 * client may not use refresh tokens) before any hook sees the scope, so the request as sent is read: its query, or its
 * form. A resumed authorization sends none (its request was read when it began).
 */
function refuseOfflineAccessNotAllowed(
  ctx: KoaContextWithOIDC,
  client: { metadata(): Record<string, unknown> } | undefined,
): void {
  if (!client || settingsOfClient(client).AllowOfflineAccess) return;
  const sent = [ctx.query?.scope, ctx.oidc.body?.scope].find((scope): scope is string => typeof scope === 'string');
  if (sent?.split(' ').includes('offline_access'))
    throw new errors.InvalidScope(
      'offline_access is not allowed for this client (AllowOfflineAccess)',
      'offline_access',
    );
}

/**
 * The scopes a request names, refused with `invalid_scope` where IdentityServer's resource validator refuses them:
 * `offline_access` from a client without AllowOfflineAccess, and a scope nobody knows. Asked before anything else is
 * done with the request (the resource indicators' hooks, the password grant before the password is checked).
 */
export async function refuseInvalidScopes(
  known: KnownScopes,
  ctx: KoaContextWithOIDC,
  client: { metadata(): Record<string, unknown> } | undefined,
): Promise<void> {
  refuseOfflineAccessNotAllowed(ctx, client);
  await refuseUnknownScopes(known, client, ctx.oidc.params?.scope);
}
