import type { Request } from 'express';
import Provider, { type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import { MAX_LIFETIME_SECONDS } from '../../platform/security/field-bounds';
import { logger } from '../../platform/observability/logger';
import type { Db } from '../../platform/store/database';
import { findClient } from '../../platform/store/clients';
import type { SigningJwk } from '../../platform/store/signing-keys';
import type { KeyRing } from '../../platform/security/data-protection';
import { createPostgresAdapter, isStorableKey } from './adapter';
import { DISCOVERY_PATH, OIDC_ROUTES } from '../sign-in-paths';
import { claimsOf, tokenClaimsOf, type ScopeClaims } from './claims';
import {
  allowedScopesOf,
  clientMetadata,
  EXTRA_CLIENT_METADATA,
  verifyClientSecret,
  type ClientSettings,
} from './clients';
import { adoptMigratedRefreshToken } from './migrated-refresh-tokens';
import { verifyIssuedAccessToken } from './issued-tokens';
import { revokeAccessToken } from '../store/admin-tokens';
import { renderErrorPage, signOutPage, signedOutPage } from './pages';
import { deviceFlowFeature, userCodeBudget } from './device-flow';
import {
  AUDIENCE_SEPARATOR,
  indicatorsInRequest,
  RESOURCE_PREFIX,
  resourceOfScopes,
  resourceServer,
  scopesOfRequest,
  type ApiResources,
} from './resources';
import { accessTokenShape, idpClaimOf } from './token-shape';
import type { AppConfig } from '../../platform/config/schema';
import { registerPasswordGrant } from './password-grant';
import type { SignOut } from '../../provisioning/sign-out-notices';
import type { SourceReadThrough } from '../read-through';

/**
 * IdentityServer issues a refresh token for `offline_access` whatever the prompt; oidc-provider, following OpenID
 * Connect Core §11, drops that scope unless the request says `prompt=consent`. An authorization request asking for
 * offline_access is read as asking for consent too, which the sign-in pages grant without a page unless the client
 * RequireConsent. Returns the request URL to use.
 */
export function withOfflineConsent(url: string): string {
  const query = url.indexOf('?');
  if (query === -1 || !url.startsWith(`${OIDC_ROUTES.authorization}?`)) return url;
  const params = new URLSearchParams(url.slice(query + 1));
  const scope = params.get('scope')?.split(' ') ?? [];
  const prompts = params.get('prompt')?.split(' ').filter(Boolean) ?? [];
  if (!scope.includes('offline_access') || prompts.includes('consent') || prompts.includes('none')) return url;
  params.set('prompt', [...prompts, 'consent'].join(' '));
  return `${OIDC_ROUTES.authorization}?${params.toString()}`;
}

/**
 * Clears who signed in to a session (oidc-provider's Session.loginAccount, undone). oidc-provider's session proxy
 * refuses to set accountId to nothing, so the fields are deleted; setting `authorizations` marks the session changed,
 * for it to be saved so.
 */
function endSignIn(session: {
  accountId?: string;
  loginTs?: number;
  amr?: string[];
  acr?: string;
  authorizations?: unknown;
}) {
  delete session.accountId;
  delete session.loginTs;
  delete session.amr;
  delete session.acr;
  session.authorizations = {};
}

/**
 * Discovery as IdentityServer's listed it for the same configuration: `scopes_supported` holds the identity and API
 * scopes marked ShowInDiscoveryDocument (oidc-provider lists its identity scopes only, and every one of them).
 */
function discoveryParity(scopes: ScopeClaims) {
  return async (ctx: KoaContextWithOIDC, next: () => Promise<void>) => {
    await next();
    if (ctx.path !== DISCOVERY_PATH || ctx.status !== 200 || !ctx.body || typeof ctx.body !== 'object') return;
    (ctx.body as Record<string, unknown>).scopes_supported = scopes.discoveryScopes;
  };
}

/**
 * Introspection names a token's audiences as an array, as Duende IdentityServer's does: oidc-provider holds one
 * audience per token, so a token for several API resources carries their names joined (resources.ts).
 */
function introspectedAudiences() {
  return async (ctx: KoaContextWithOIDC, next: () => Promise<void>) => {
    await next();
    if (ctx.path !== OIDC_ROUTES.introspection || ctx.status !== 200 || !ctx.body || typeof ctx.body !== 'object')
      return;
    const body = ctx.body as Record<string, unknown>;
    if (typeof body.aud === 'string' && body.aud.includes(AUDIENCE_SEPARATOR))
      body.aud = body.aud.split(AUDIENCE_SEPARATOR);
  };
}

/**
 * A JWT access token is not stored when issued, and oidc-provider's revocation endpoint refuses one as
 * `unsupported_token_type` (RFC 7009 §2.2.1). IdentityServer revokes its JWTs' use at its own APIs, so here a JWT this
 * service issued to the authenticated client is listed as revoked until it expires (the admin API refuses it), and
 * the answer is the endpoint's 200. Another client's token keeps oidc-provider's refusal.
 */
function revokeJwtAccessTokens(db: Db, issuer: string) {
  return async (ctx: KoaContextWithOIDC, next: () => Promise<void>) => {
    await next();
    if (ctx.path !== OIDC_ROUTES.revocation || ctx.method !== 'POST') return;
    if (ctx.status !== 400 || (ctx.body as { error?: string } | undefined)?.error !== 'unsupported_token_type') return;
    const token = ctx.oidc?.params?.token;
    const clientId = ctx.oidc?.client?.clientId;
    if (typeof token !== 'string' || !clientId) return;
    const claims = await verifyIssuedAccessToken(db, issuer, token);
    if (!claims || claims.client_id !== clientId) return;
    await revokeAccessToken(db, claims.jti, new Date(claims.exp * 1000));
    ctx.status = 200;
    ctx.body = '';
  };
}

/**
 * What a person (or the developer of the application) reads when the provider cannot go on: oidc-provider's words,
 * and for the mistakes an integrator makes, what to check.
 */
function errorPageText(out: { error: string; error_description?: string }, clientId: unknown): string {
  const said = out.error_description ?? out.error;
  const client = typeof clientId === 'string' && clientId.length <= 200 ? `"${clientId}"` : 'it names';
  if (out.error === 'invalid_client')
    return `${said}. This sign-in service does not know the application's client_id ${client}, or the client is disabled: check the client_id the application sends, and that the client exists and is enabled (GET /api/v1/clients/{clientId}).`;
  if (out.error === 'invalid_redirect_uri')
    return `${said}. The application asked to return to an address its client does not list: check its redirect_uri against the client's RedirectUris (exact match, scheme, port and path included).`;
  return said;
}

export interface ProviderDependencies {
  db: Db;
  /** The service's data-protection ring: it seals what the migration carried over (refresh-token data). */
  ring: KeyRing;
  issuer: string;
  signingKeys: SigningJwk[];
  cookieKeys: string[];
  scopes: ScopeClaims;
  apiResources: ApiResources;
  /** Oidc:EmitScopesAsSpaceDelimitedStringInJwt: `scope` as one string instead of Duende's JSON array. */
  scopesAsString: boolean;
  /** The lockout, rate limit and confirmation rules the password grant holds as the sign-in pages do. */
  config: AppConfig;
  /** Tells the clients of a session that ends at /connect/endsession (back-channel logout). */
  signOut: SignOut;
  /** The cutover's read-through window, while it is configured. */
  readThrough?: SourceReadThrough;
}

/**
 * A client's lifetime setting, at most MAX_LIFETIME_SECONDS: the admin API and the configuration refuse longer ones,
 * and a client stored before (or migrated with one) still gets tokens instead of a date no store can hold.
 */
const lifetime = (seconds: number | undefined, fallback: number) =>
  Math.min(typeof seconds === 'number' && seconds > 0 ? seconds : fallback, MAX_LIFETIME_SECONDS);

const settingsOfClient = (client: { metadata(): Record<string, unknown> } | undefined): ClientSettings =>
  (client?.metadata()['urn:identity-service:settings'] as ClientSettings | undefined) ?? {};

/**
 * IdentityServer's RefreshTokenExpiration, measured from the first issue (`iiat`, which oidc-provider carries through
 * every rotation; an adopted token's is its creation at the source): Absolute (1, its default) ends a token
 * AbsoluteRefreshTokenLifetime after it; Sliding (0) extends it by SlidingRefreshTokenLifetime at each use, never past
 * that end, and without an end when AbsoluteRefreshTokenLifetime is 0 (Duende's DefaultRefreshTokenService).
 */
export function refreshTokenLifetime(settings: ClientSettings, token: { iat?: number; iiat?: number }): number {
  const now = Math.floor(Date.now() / 1000);
  const age = now - (token.iiat ?? token.iat ?? now);
  if (settings.RefreshTokenExpiration !== 0)
    return Math.max(1, (settings.AbsoluteRefreshTokenLifetime || DEFAULT_ABSOLUTE_LIFETIME) - age);
  const absolute = settings.AbsoluteRefreshTokenLifetime ?? DEFAULT_ABSOLUTE_LIFETIME;
  const sliding = settings.SlidingRefreshTokenLifetime || absolute || DEFAULT_ABSOLUTE_LIFETIME;
  return Math.max(1, absolute === 0 ? sliding : Math.min(sliding, absolute - age));
}

/** IdentityServer's default AbsoluteRefreshTokenLifetime: 30 days. */
const DEFAULT_ABSOLUTE_LIFETIME = 2592000;

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

/**
 * The OpenID Connect provider (oidc-provider): every artefact in PostgreSQL, clients from the clients store, claims
 * from the scopes store, access tokens as JWTs for the API resource of the requested scopes.
 */
export function createOidcProvider(deps: ProviderDependencies): Provider {
  const { db, issuer, scopes, apiResources } = deps;
  const stored = createPostgresAdapter(db);
  const adapter = createPostgresAdapter(db, {
    Client: {
      async find(id: string) {
        if (!isStorableKey(id)) return undefined;
        const row = await findClient(db, id);
        // An API resource is a client only to authenticate at introspection: it has no grant type and no response
        // type, so the token and authorization endpoints refuse it.
        return row && row.enabled ? clientMetadata(row, scopes.names) : undefined;
      },
    },
    RefreshToken: {
      async find(id: string) {
        if (!isStorableKey(id)) return undefined;
        const adoption = {
          db,
          ring: deps.ring,
          refreshTokens: stored('RefreshToken'),
          grants: stored('Grant'),
          identityScopes: scopes.names,
          resourceOf: (requested: string[]) => resourceOfScopes(apiResources, requested),
        };
        return (
          (await stored('RefreshToken').find(id)) ??
          // During the read-through window a token the sweep carried over is adopted only while the source holds it live.
          (await adoptMigratedRefreshToken({ ...adoption, liveAtSource: deps.readThrough?.liveAtSource }, id)) ??
          // During the read-through window, a token the source rotated after the last sweep is carried over now.
          ((await deps.readThrough?.refreshToken(id)) ? await adoptMigratedRefreshToken(adoption, id) : undefined)
        );
      },
    },
  });

  const configuration: Configuration = {
    adapter,
    findAccount: async (ctx, sub) => {
      const account = await claimsOf(db, sub);
      if (!account) {
        // A session left by a user since deactivated or deleted signs nobody in: it is ended here, so the
        // authorization asks who is signing in (the e-mail page) instead of failing on an account that is gone.
        const session = ctx.oidc?.session;
        if (session?.accountId === sub) endSignIn(session);
        return undefined;
      }
      return {
        accountId: sub,
        // Duende's ID tokens name where the user signed in (`idp`), as its access tokens do (token-shape.ts).
        claims: (use) => ({ ...account.claims(), ...(use === 'id_token' ? idpClaimOf(ctx) : {}) }),
      };
    },
    jwks: { keys: deps.signingKeys },
    formats: { customizers: { jwt: accessTokenShape({ scopesAsString: deps.scopesAsString }) } },
    cookies: { keys: deps.cookieKeys },
    routes: OIDC_ROUTES,
    scopes: [...scopes.names],
    claims: scopes.claimsByScope,
    conformIdTokenClaims: false,
    responseTypes: ['code'],
    clientAuthMethods: ['none', 'client_secret_basic', 'client_secret_post'],
    enabledJWA: {
      idTokenSigningAlgValues: ['RS256'],
      userinfoSigningAlgValues: ['RS256'],
      introspectionSigningAlgValues: ['RS256'],
      authorizationSigningAlgValues: ['RS256'],
      clientAuthSigningAlgValues: ['RS256', 'PS256', 'ES256'],
    },
    extraClientMetadata: { properties: EXTRA_CLIENT_METADATA },
    pkce: {
      required: (_ctx, client) => client.clientAuthMethod === 'none' || settingsOfClient(client).RequirePkce !== false,
    },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      deviceFlow: deviceFlowFeature(db),
      // Not offered: the service's own admin API does not check DPoP proofs, so a bound token must not be issued
      // (clients with RequireDPoP are reported as unsupported), nor advertised in discovery.
      dPoP: { enabled: false },
      // Logout tokens go out through a workflow that retries them (backchannelLogout below), not from the request.
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
      resourceIndicators: {
        enabled: true,
        // Every API of the requested scopes: getResourceServerInfo keeps those the client was granted, and refuses
        // the request (invalid_target) when it was granted none.
        defaultResource: async (ctx: KoaContextWithOIDC) => {
          const scope = ctx.oidc.params?.scope;
          const resource = await resourceOfScopes(apiResources, typeof scope === 'string' ? scope.split(' ') : []);
          return resource ? `${RESOURCE_PREFIX}${resource}` : undefined;
        },
        // A refresh asking for identity scopes alone gets a token for userinfo, not one for the APIs it left out.
        useGrantedResource: (ctx) => {
          const asked = ctx.oidc.params?.scope;
          return typeof asked !== 'string' || asked.split(' ').some((s) => s && !scopes.names.has(s));
        },
        getResourceServerInfo: (ctx, indicator, client) =>
          resourceServer(apiResources, indicator, {
            allowedScopes: allowedScopesOf(client),
            requestedScopes: scopesOfRequest(ctx),
            fromRequest: indicatorsInRequest(ctx).includes(indicator),
            reference: settingsOfClient(client).AccessTokenType === 1,
          }),
      },
    },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    ttl: {
      AccessToken: (_ctx, token, client) =>
        token.resourceServer?.accessTokenTTL ?? lifetime(settingsOfClient(client).AccessTokenLifetime, 3600),
      ClientCredentials: (_ctx, token, client) =>
        token.resourceServer?.accessTokenTTL ?? lifetime(settingsOfClient(client).AccessTokenLifetime, 3600),
      AuthorizationCode: (ctx) => lifetime(settingsOfClient(ctx.oidc.client).AuthorizationCodeLifetime, 300),
      IdToken: (ctx) => lifetime(settingsOfClient(ctx.oidc.client).IdentityTokenLifetime, 300),
      RefreshToken: (_ctx, token, client) =>
        Math.min(refreshTokenLifetime(settingsOfClient(client), token), MAX_LIFETIME_SECONDS),
      Interaction: 3600,
      Session: 14 * 24 * 3600,
      Grant: 365 * 24 * 3600,
    },
    issueRefreshToken: (_ctx, client, code) =>
      client.grantTypeAllowed('refresh_token') && code.scopes.has('offline_access'),
    // IdentityServer's RefreshTokenUsage: OneTimeOnly (1, its default) rotates at every use, ReUse (0) keeps it.
    rotateRefreshToken: (ctx) => settingsOfClient(ctx.oidc.client).RefreshTokenUsage !== 0,
    // Only a JWT access token (one for an API) shows its claims; an opaque one for userinfo needs none.
    // What a grant put in the token's extra claims (the password grant: how the user signed in) stays.
    extraTokenClaims: async (_ctx, token) =>
      'resourceServer' in token && token.resourceServer
        ? { ...('extra' in token ? token.extra : undefined), ...(await tokenClaimsOf(db, token, scopes)) }
        : undefined,
    // `null` is what a sandboxed frame or a file page of any site sends: a client stored with it (before the admin API
    // refused it, or migrated) gets no CORS answer for it, or every site could read its token answers.
    clientBasedCORS: (_ctx, origin, client) =>
      origin !== 'null' &&
      ((client.metadata()['urn:identity-service:cors-origins'] as string[] | undefined) ?? []).includes(origin),
    renderError: (ctx, out) => {
      ctx.type = 'html';
      ctx.body = renderErrorPage(errorPageText(out, ctx.oidc?.params?.client_id));
    },
  };

  const provider = new Provider(issuer, configuration);
  provider.use(revokeJwtAccessTokens(db, issuer));
  provider.use(discoveryParity(scopes));
  provider.use(introspectedAudiences());
  provider.use(userCodeBudget(provider, db, deps.config));
  // oidc-provider answers its own faults with server_error and keeps the cause to itself: the log gets it, with the
  // request id the answer carries in X-Request-Id.
  provider.on('server_error', (ctx: KoaContextWithOIDC, error: Error) => {
    const log = (ctx.req as Partial<Request>).log ?? logger;
    log.error({ err: error }, `sign-in: ${ctx.method} ${ctx.path} failed`);
  });
  registerPasswordGrant(provider, { db, config: deps.config, scopes, apiResources, readThrough: deps.readThrough });
  // Behind a TLS-terminating proxy the public URL is https while this process speaks http.
  if (issuer.startsWith('https:')) provider.proxy = true;
  // Duende IdentityServer puts the session id (`sid`) in every ID token and user access token; oidc-provider only for
  // clients that registered for session-bound logout.
  provider.Client.prototype.includeSid = () => true;
  // At /connect/endsession oidc-provider hands each client of the session with a back-channel logout URI to this,
  // and waits: the notice is started as a workflow (sign-out.ts) that signs, sends and retries the logout token, so
  // the user's sign-out never waits on a client. A notice that cannot be started is logged and counted there.
  provider.Client.prototype.backchannelLogout = function (this: { clientId: string }, sub: string, sid: string) {
    return deps.signOut.notify(sub, [{ clientId: this.clientId, sid }]);
  };
  // Stored secrets are IdentityServer hashes: a presented secret is hashed and compared with each unexpired one.
  provider.Client.prototype.compareClientSecret = function (this: { clientId: string }, actual: string) {
    return verifyClientSecret(db, this.clientId, actual);
  };
  return provider;
}
