import type { Configuration } from 'oidc-provider';
import type { Db } from '../../../platform/store/database';
import type { ScopeClaims } from '../claims';
import { allowedScopesOf } from '../provider-clients';
import { deviceFlowFeature } from '../device-flow';
import { signOutPage, signedOutPage } from '../sign-in-pages';
import type { ApiResources } from '../resources';
import { resourceIndicators } from './resource-indicators';
import { settingsOfClient } from './ttl';

/** The kinds of access token: a user's, and a client's own (client credentials). */
const ACCESS_TOKEN_KINDS = new Set(['AccessToken', 'ClientCredentials']);

/**
 * Who may read a token at `/connect/introspect`: the client it was issued to, and, as at Duende IdentityServer, an
 * API resource authenticating with its name and one of its ApiResourceSecrets, for an access token that carries one
 * of its scopes (any other token, a refresh token above all, reads `active: false` to it: Duende's introspection
 * validates only access tokens for an API). oidc-provider's default lets any confidential client read any token's
 * claims.
 */
function mayIntrospect(
  client: { clientId: string; metadata(): Record<string, unknown> },
  token: { clientId?: string; scope?: string; kind: string },
) {
  if (token.clientId === client.clientId) return true;
  if (!settingsOfClient(client).apiResource || !ACCESS_TOKEN_KINDS.has(token.kind)) return false;
  const served = new Set(allowedScopesOf(client));
  return (token.scope ?? '').split(' ').some((scope) => served.has(scope));
}

/** oidc-provider's features as IdentityServer's clients meet them: what is served, and what is not advertised. */
export function features(db: Db, scopes: ScopeClaims, apiResources: ApiResources): Configuration['features'] {
  return {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    deviceFlow: deviceFlowFeature(db),
    // Not offered: the service's own admin API does not check DPoP proofs, so a bound token must not be issued
    // (clients with RequireDPoP are reported as unsupported), nor advertised in discovery.
    dPoP: { enabled: false },
    // Logout tokens go out through a workflow that retries them (Client.prototype.backchannelLogout in provider.ts),
    // not from the request.
    backchannelLogout: { enabled: true },
    // Only the client a token was issued to may introspect it (oidc-provider's default lets any confidential
    // client read any token's claims).
    introspection: { enabled: true, allowedPolicy: (_ctx, client, token) => mayIntrospect(client, token) },
    // Not served: IdentityServer's clients do not use it, and discovery must not advertise what answers 404.
    pushedAuthorizationRequests: { enabled: false },
    revocation: { enabled: true },
    // Only registered post-logout redirect URIs are honoured (oidc-provider refuses others).
    rpInitiatedLogout: {
      enabled: true,
      logoutSource: (ctx, form) => {
        ctx.type = 'html';
        ctx.body = signOutPage(form);
      },
      postLogoutSuccessSource: (ctx) => {
        ctx.type = 'html';
        ctx.body = signedOutPage();
      },
    },
    resourceIndicators: resourceIndicators(scopes, apiResources),
  };
}
