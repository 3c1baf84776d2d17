import type { Configuration, KoaContextWithOIDC } from 'oidc-provider';
import type { Db } from '../../../platform/store/database';
import type { ScopeClaims } from '../claims';
import { allowedScopesOf } from '../provider-clients';
import { deviceFlowFeature } from '../device-flow';
import { signOutPage, signedOutPage, signingOutPage } from '../sign-in-pages';
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
  if (!ACCESS_TOKEN_KINDS.has(token.kind)) return false;
  return scopesShownTo(client, (token.scope ?? '').split(' ')).length > 0;
}

/**
 * The scopes of an access token an API resource may see at introspection: those it serves (Duende's
 * IntrospectionResponseGenerator lists only these, and an API none of whose scopes the token carries reads
 * `active: false`). A client that is no API resource sees none.
 */
export function scopesShownTo(client: { metadata(): Record<string, unknown> }, scopes: string[]): string[] {
  if (!settingsOfClient(client).apiResource) return [];
  const served = new Set(allowedScopesOf(client));
  return scopes.filter((scope) => served.has(scope));
}

/**
 * Whether a sign-out may go on without asking. Duende IdentityServer asks only when the request names no client it
 * could authenticate (LogoutRequest.ShowSignoutPrompt => ClientId.IsMissing(); EndSessionRequestValidator takes the
 * client from a validated id_token_hint, whose lifetime it does not check, and refuses one whose `sub` is not the
 * signed-in user's), and its UI then signs out at once (Pages/Account/Logout: "it's safe to automatically sign-out";
 * the prompt "prevents attacks where the user is automatically signed out by another malicious web page"). oidc-provider
 * calls logoutSource only after it validated the hint (signature, issuer, audience; expiry ignored) and refused a
 * post_logout_redirect_uri the client did not register; a hint for another user still gets the question here.
 */
function signsOutWithoutAsking(ctx: KoaContextWithOIDC): boolean {
  const hint = ctx.oidc.entities.IdTokenHint as { payload?: { sub?: unknown } } | undefined;
  const accountId = ctx.oidc.session?.accountId;
  return ctx.oidc.client !== undefined && accountId !== undefined && hint?.payload?.sub === accountId;
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
        ctx.body = signsOutWithoutAsking(ctx) ? signingOutPage(form) : signOutPage(form);
      },
      postLogoutSuccessSource: (ctx) => {
        ctx.type = 'html';
        ctx.body = signedOutPage();
      },
    },
    resourceIndicators: resourceIndicators(scopes, apiResources),
  };
}
