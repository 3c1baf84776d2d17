import type { Configuration, KoaContextWithOIDC } from 'oidc-provider';
import type { ScopeClaims } from '../claims';
import { allowedScopesOf } from '../provider-clients';
import {
  indicatorsInRequest,
  RESOURCE_PREFIX,
  resourceOfScopes,
  resourceServer,
  scopesOfRequest,
  type ApiResources,
} from '../resources';
import { refuseInvalidScopes } from './requested-scopes';
import { settingsOfClient } from './ttl';

type ResourceIndicators = NonNullable<NonNullable<Configuration['features']>['resourceIndicators']>;

/**
 * Access tokens for the API resources of the requested scopes. oidc-provider asks these hooks, with the client, for
 * every request that names scopes (an authorization, after its redirect URI was checked, so a refusal goes back to the
 * client; a device authorization; the client-credentials and refresh grants): the requested scopes are checked there,
 * an unknown one, or offline_access the client may not have, refused (requested-scopes.ts).
 */
export function resourceIndicators(scopes: ScopeClaims, apiResources: ApiResources): ResourceIndicators {
  const known = { scopes, apiResources };
  return {
    enabled: true,
    // Every API of the requested scopes: getResourceServerInfo keeps those the client was granted, and refuses
    // the request (invalid_target) when it was granted none.
    defaultResource: async (ctx: KoaContextWithOIDC) => {
      await refuseInvalidScopes(known, ctx, ctx.oidc.client);
      const scope = ctx.oidc.params?.scope;
      const resource = await resourceOfScopes(apiResources, typeof scope === 'string' ? scope.split(' ') : []);
      return resource ? `${RESOURCE_PREFIX}${resource}` : undefined;
    },
    // A refresh asking for identity scopes alone gets a token for userinfo, not one for the APIs it left out.
    useGrantedResource: (ctx) => {
      const asked = ctx.oidc.params?.scope;
      return typeof asked !== 'string' || asked.split(' ').some((s) => s && !scopes.names.has(s));
    },
    getResourceServerInfo: async (ctx, indicator, client) => {
      await refuseInvalidScopes(known, ctx, client);
      return resourceServer(apiResources, indicator, {
        allowedScopes: allowedScopesOf(client),
        requestedScopes: scopesOfRequest(ctx),
        fromRequest: indicatorsInRequest(ctx).includes(indicator),
        reference: settingsOfClient(client).AccessTokenType === 1,
      });
    },
  };
}
