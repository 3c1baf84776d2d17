import type { Request } from 'express';
import Provider, { type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import { logger } from '../../platform/observability/logger';
import { OIDC_ROUTES } from '../sign-in-paths';
import { tokenClaimsOf } from './claims';
import { EXTRA_CLIENT_METADATA, matchesAnyHash, metadataOf, SECRET_HASHES } from './provider-clients';
import { renderErrorPage } from './sign-in-pages';
import { errorReference } from './error-page';
import { userCodeBudget } from './device-flow';
import { accessTokenShape } from './token-shape';
import { carrySessionIdp } from './session-idp';
import { registerPasswordGrant } from './password-grant';
import { findAccount } from './provider-configuration/find-account';
import type { ProviderDependencies } from './provider-configuration/provider-dependencies';
import { errorPageText } from './provider-configuration/error-page-text';
import { features } from './provider-configuration/features';
import {
  discoveryParity,
  introspectedAudiences,
  introspectJwtAccessTokens,
  revokeJwtAccessTokens,
} from './provider-configuration/middleware';
import { providerAdapter } from './provider-configuration/stored-artefacts';
import { settingsOfClient, TTL } from './provider-configuration/ttl';
import { recordDeviceOfSession } from './session-device-recording';

export type { ProviderDependencies };

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
 * The OpenID Connect provider (oidc-provider): every artefact in PostgreSQL, clients from the clients store, claims
 * from the scopes store, access tokens as JWTs for the API resource of the requested scopes.
 */
export function createOidcProvider(deps: ProviderDependencies): Provider {
  const { db, issuer, scopes, apiResources } = deps;
  const provider = new Provider(issuer, configurationOf(deps));
  carrySessionIdp(provider);
  provider.use(revokeJwtAccessTokens(db, issuer));
  provider.use(introspectJwtAccessTokens(db, issuer));
  provider.use(discoveryParity(scopes));
  provider.use(introspectedAudiences());
  provider.use(userCodeBudget(provider, db, deps.config));
  // oidc-provider answers its own faults with server_error and keeps the cause to itself: the log gets it, with the
  // request id the answer carries in X-Request-Id.
  provider.on('server_error', (ctx: KoaContextWithOIDC, error: Error) => {
    const log = (ctx.req as Partial<Request>).log ?? logger;
    log.error({ err: error }, `sign-in: ${ctx.method} ${ctx.path} failed`);
  });
  provider.on('authorization.success', recordDeviceOfSession(db));
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
  acceptHintsOfEveryPublishedKey(provider);
  // Stored secrets are IdentityServer hashes: a presented secret is hashed and compared with each unexpired one, as
  // the client was read with them (SECRET_HASHES, stored-artefacts.ts); a client without them has none to match.
  provider.Client.prototype.compareClientSecret = function (
    this: { metadata(): Record<string, unknown> },
    actual: string,
  ) {
    const hashes = metadataOf(this)[SECRET_HASHES];
    return Promise.resolve(Array.isArray(hashes) && matchesAnyHash(hashes as string[], actual));
  };
  return provider;
}

/** The asymmetric algorithms of the service's keys: its own RSA keys and migrated RSA or EC ones. */
const PUBLISHED_KEY_ALGORITHMS = /^(RS|PS|ES)(256|384|512)$/;

/**
 * oidc-provider checks an `id_token_hint` (endsession, authorize) only under the algorithm the client's ID tokens use
 * now (RS256); Duende IdentityServer accepts a hint signed by any of its validation keys. A hint signed by a published
 * key of another asymmetric algorithm (a source's ES256 key) is checked under that algorithm, against the same key
 * set, for the same client, with the same rules (issuer, audience, its lifetime not checked).
 */
function acceptHintsOfEveryPublishedKey(provider: Provider): void {
  const IdToken = provider.IdToken as unknown as {
    validate(jwt: string, client: { clientId: string; idTokenSignedResponseAlg: string }): Promise<unknown>;
  };
  const validate = IdToken.validate.bind(IdToken);
  IdToken.validate = (jwt, client) => {
    let alg: unknown;
    try {
      alg = (JSON.parse(Buffer.from(jwt.split('.')[0], 'base64url').toString('utf8')) as { alg?: unknown }).alg;
    } catch {
      return validate(jwt, client);
    }
    if (typeof alg !== 'string' || alg === client.idTokenSignedResponseAlg || !PUBLISHED_KEY_ALGORITHMS.test(alg))
      return validate(jwt, client);
    return validate(jwt, { clientId: client.clientId, idTokenSignedResponseAlg: alg });
  };
}

/** oidc-provider's configuration; its larger sections are modules of provider-configuration/. */
function configurationOf(deps: ProviderDependencies): Configuration {
  const { db, scopes, apiResources } = deps;
  return {
    adapter: providerAdapter(deps),
    findAccount: findAccount(db),
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
    features: features(db, scopes, apiResources),
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    ttl: TTL,
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
      ((metadataOf(client)['urn:identity-service:cors-origins'] as string[] | undefined) ?? []).includes(origin),
    // A person reads plain words and a reference; the integrator's detail goes to the log line under that reference.
    renderError: (ctx, out) => {
      const text = errorPageText(out, ctx.oidc?.params?.client_id, ctx.oidc?.client);
      const reference = errorReference(ctx.req as Partial<Request>, text.detail, { error: out.error });
      ctx.type = 'html';
      ctx.body = renderErrorPage(text.message, { title: 'Sign-in is not possible', reference, onward: text.onward });
    },
  };
}
