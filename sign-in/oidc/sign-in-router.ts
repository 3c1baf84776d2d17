import { Router, type Request, type Response } from 'express';
import type { AppConfig } from '../../platform/config/config-schema';
import { putClient } from '../../platform/store/clients';
import type { Db } from '../../platform/store/database';
import { currentSigningKeys, sealStoredSigningKeys, signingKeysVersion } from '../../platform/store/signing-keys';
import { loadScopeClaims } from './claims';
import { clientRow, configuredSecrets } from './provider-clients';
import { cookieKeys } from './cookie-keys';
import { createFederation, type Federation, type FederationDependencies } from '../federation/federation';
import {
  inCanonicalForm,
  isAccountPath,
  isAdminPagePath,
  INTERACTION_PREFIX,
  isFederationPath,
  isProviderPath,
  OIDC_ROUTES,
} from '../sign-in-paths';
import { adminPagesRouter, type AdminPage } from './admin-pages';
import { parseAllowList } from '../../platform/security/callback-address';
import { accountRouter } from './account/account-router';
import { interactionOf } from './interactions/interaction-context';
import { interactionRouter } from './interactions/interaction-router';
import { createOidcProvider, withOfflineConsent } from './provider';
import { answerFromCopy, publishedDocuments } from './provider-documents';
import { providerSettingsVersion } from '../store/sign-in-users';
import { apiResourcesOfBuild } from './resources';
import { logger } from '../../platform/observability/logger';
import type { Mailer } from '../../platform/email/mailer';
import { recoveryRouter, type RecoveryMails } from '../recovery/recovery-router';
import { createSignOut, type SignOut } from '../sign-out-notices';
import type { Registration } from '../registration';
import { forgetSourceCookie, sourceSessionCarrier, type SourceSessionCarrier } from './source-sessions';
import type Provider from 'oidc-provider';
import type { ClientReads } from '../../platform/store/client-reads';

/**
 * Federation's dependencies (the issuer is Api:PublicUrl), with the configuration in place of the allow-list, and
 * the mail account recovery sends.
 */
export type SignInDependencies = Omit<FederationDependencies, 'allow'> & {
  config: AppConfig;
  mailer: Mailer;
  mails: RecoveryMails;
  /** The operators' pages by path (under /admin/), each behind a sign-in with the IdentityAdmin role. */
  adminPages?: Record<string, AdminPage>;
  /** Self-service registration, the one the API's register route uses (sign-in/registration.ts). */
  registration: Registration;
  /** Clients as the provider reads them (kept between requests, platform/store/client-reads.ts). */
  clients: ClientReads;
};

/**
 * oidc-provider builds every URL it hands out (discovery, the JWKS, form actions) from the request's Host and scheme,
 * and (Koa, `proxy` on behind a TLS terminator) would believe any X-Forwarded-* header. It is handed the facts as the
 * service established them instead: the host and scheme of Api:PublicUrl, its path as the mount path (oidc-provider
 * reads that from `originalUrl`), and the client address Express derived under Api:TrustedProxies. The Host header a
 * client sent is never used.
 */
function forwardedAsExpressSees(req: Request, issuer: string): void {
  const base = new URL(issuer);
  req.headers.host = base.host;
  delete req.headers['x-forwarded-host'];
  req.headers['x-forwarded-for'] = req.ip ?? req.socket.remoteAddress ?? '';
  req.headers['x-forwarded-proto'] = base.protocol.replace(':', '');
  const mountPath = base.pathname.replace(/\/+$/, '');
  req.originalUrl = `${mountPath}${req.url}`;
}

/**
 * Headers of every sign-in answer: no page may be framed (clickjacking a sign-in or consent form), nothing a person
 * saw may come back from a cache (a shared computer's Back button), and no sign-in URL leaks to another site in a
 * Referer. Discovery and the JWKS stay cacheable: they are public and clients fetch them often.
 */
function setSignInHeaders(res: Response, path: string): void {
  res.set({
    'X-Frame-Options': 'DENY',
    'Content-Security-Policy': "frame-ancestors 'none'",
    'Referrer-Policy': 'no-referrer',
    'X-Content-Type-Options': 'nosniff',
  });
  if (!path.startsWith('/.well-known/')) res.set('Cache-Control', 'no-store');
}

/** The client and scope of an authorization request's query. */
const requestOf = (params: Record<string, unknown>) => ({
  clientId: typeof params.client_id === 'string' ? params.client_id : undefined,
  scope: typeof params.scope === 'string' ? params.scope : undefined,
});

/**
 * A sign-in page opened by a browser with the source's cookie (Migration:SourceSessions): when the cookie opens a
 * session, the browser goes back to the authorization request the page was for, which the session now answers.
 */
async function resumedWithSourceSession(
  provider: Provider,
  req: Request,
  res: Response,
  carryOver: SourceSessionCarrier,
): Promise<boolean> {
  const details = await interactionOf(provider, req, res).catch(() => undefined);
  if (!details || details.prompt.name !== 'login') return false;
  if (!(await carryOver(provider, req, res, requestOf(details.params)))) return false;
  const query = new URLSearchParams(
    Object.entries(details.params).flatMap(([k, v]) => (typeof v === 'string' ? [[k, v]] : [])),
  );
  // Relative, so the mount path under Api:PublicUrl stays: /interaction/{uid} → /connect/authorize.
  res.redirect(303, `..${OIDC_ROUTES.authorization}?${query.toString()}`);
  return true;
}

/** Configured clients are written to the store at start; they win over migrated clients of the same id. */
async function applyConfiguredClients(db: Db, config: AppConfig): Promise<void> {
  for (const client of config.Clients) {
    await putClient(db, clientRow(client, 'configuration'), configuredSecrets(client), { keepProvisioningApps: true });
  }
}

/** One provider and its sign-in pages, built from the store's scopes and signing keys as they are now. */
async function buildSignIn(
  deps: SignInDependencies,
  cookieKeyList: string[],
  federation: Federation,
  signOut: SignOut,
  log: (line: string) => void,
) {
  const { db, ring, issuer } = deps;
  const sealed = await sealStoredSigningKeys(db, ring);
  if (sealed > 0) log(`sign-in: sealed ${sealed} signing keys stored before private keys were protected at rest`);
  const keys = await currentSigningKeys(db, ring, deps.config.KeyManagement);
  const provider = createOidcProvider({
    db,
    clients: deps.clients,
    ring,
    issuer,
    signingKeys: keys.published,
    cookieKeys: cookieKeyList,
    scopes: await loadScopeClaims(db),
    apiResources: await apiResourcesOfBuild(db),
    scopesAsString: deps.config.Oidc.EmitScopesAsSpaceDelimitedStringInJwt,
    config: deps.config,
    signOut,
    readThrough: deps.readThrough,
  });
  const callback = provider.callback();
  return {
    provider,
    /** When the timeline's answer changes with no change in the store: the provider is rebuilt then. */
    changesAt: keys.changesAt,
    /** What a client or an API sees of the keys: which sign and which are published, in order. */
    keySet: `signs with ${keys.signing?.kid}, publishes ${keys.published.map((k) => k.kid).join(', ')}`,
    callback,
    /** Discovery and the JWKS as this build answers them: the key set changes only with a new build. */
    documents: await publishedDocuments(callback, issuer),
    interactions: interactionRouter({
      provider,
      db,
      clients: deps.clients,
      config: deps.config,
      ring,
      run: deps.run,
      federation,
      mails: deps.mails,
      readThrough: deps.readThrough,
      registration: deps.registration,
    }),
    account: accountRouter({ provider, db, ring, issuer, config: deps.config, signOut, mailer: deps.mailer }),
  };
}

type BuiltSignIn = Awaited<ReturnType<typeof buildSignIn>>;

/**
 * oidc-provider reads scopes and keys once, when it is built; this keeps the build as the store has it: scopes and
 * API resources are looked at every Oidc:ReloadSeconds, the key set every KeyManagement:KeyCacheDuration and whenever a key's phase
 * changes by time alone (signing-key-timeline.ts), one look at a time, so a request never runs on keys older than
 * that. `fresh` looks when it is time and answers the build; `latest` answers it as it stands.
 */
async function keptFresh(
  db: Db,
  config: AppConfig,
  build: () => Promise<BuiltSignIn>,
  log: (line: string) => void,
): Promise<{ fresh: () => Promise<BuiltSignIn>; latest: () => BuiltSignIn }> {
  let scopesVersion = await providerSettingsVersion(db);
  let keysVersion = await signingKeysVersion(db);
  let current = await build();
  let scopesCheckedAt = Date.now();
  let keysCheckedAt = Date.now();
  let checking: Promise<void> | undefined;
  const phaseChanged = () => current.changesAt !== undefined && Date.now() >= current.changesAt.getTime();

  async function rebuildIfChanged(lookAtScopes: boolean, lookAtKeys: boolean): Promise<void> {
    if (lookAtScopes) scopesCheckedAt = Date.now();
    if (lookAtKeys) keysCheckedAt = Date.now();
    const [scopes, keys] = await Promise.all([
      lookAtScopes ? providerSettingsVersion(db) : scopesVersion,
      lookAtKeys ? signingKeysVersion(db) : keysVersion,
    ]);
    if (scopes === scopesVersion && keys === keysVersion && !phaseChanged()) return;
    const before = current.keySet;
    current = await build();
    // A phase boundary that changes nothing a client sees (a key now seen everywhere, not yet signing) says nothing.
    if (scopes !== scopesVersion || current.keySet !== before)
      log(`sign-in: scopes or signing keys changed; the provider now ${current.keySet}`);
    scopesVersion = scopes;
    keysVersion = keys;
  }

  const fresh = async () => {
    const now = Date.now();
    const lookAtScopes = now - scopesCheckedAt >= config.Oidc.ReloadSeconds * 1000;
    const lookAtKeys = now - keysCheckedAt >= config.KeyManagement.KeyCacheDuration || phaseChanged();
    if (lookAtScopes || lookAtKeys) {
      checking ??= rebuildIfChanged(lookAtScopes, lookAtKeys).finally(() => (checking = undefined));
      await checking;
    }
    return current;
  };
  return { fresh, latest: () => current };
}

/**
 * Sign-in: the OpenID Connect provider at IdentityServer's paths and its sign-in pages, as one Express router for the
 * composition root to mount before the JSON API's body parser (both take form posts). A new provider replaces the
 * old when scopes or keys change (keptFresh; every other artefact lives in the store, so the swap signs nobody out).
 */
export async function createSignIn(deps: SignInDependencies): Promise<Router> {
  const { config, db, log = (line: string) => logger.info(line) } = deps;
  await applyConfiguredClients(db, config);
  const cookieKeyList = await cookieKeys(db, config.Oidc.CookieKeys, (line) => logger.warn(line));
  const federation = await createFederation({
    db,
    ring: deps.ring,
    run: deps.run,
    issuer: deps.issuer,
    allow: parseAllowList(config.Auth.AllowedInternalTargets),
    readThrough: deps.readThrough,
  });
  const signOut = createSignOut({ db, run: deps.run, issuer: deps.issuer });
  const carryOver = sourceSessionCarrier({ db, ring: deps.ring, config, readThrough: deps.readThrough });
  const { fresh, latest } = await keptFresh(
    db,
    config,
    () => buildSignIn(deps, cookieKeyList, federation, signOut, log),
    log,
  );
  // Recovery needs no provider: its pages stay the same when the provider is rebuilt.
  const recovery = recoveryRouter({
    db,
    config,
    mailer: deps.mailer,
    publicUrl: deps.issuer,
    mails: deps.mails,
    signOut,
  });

  const adminPages = adminPagesRouter({
    provider: () => latest().provider,
    db,
    ring: deps.ring,
    issuer: deps.issuer,
    pages: deps.adminPages ?? {},
  });
  const router = Router();
  router.use(async (req, res, next) => {
    if (isAdminPagePath(req.path) || Object.hasOwn(deps.adminPages ?? {}, req.path)) {
      setSignInHeaders(res, req.path);
      await fresh();
      return adminPages(req, res, next);
    }
    const forProvider = isProviderPath(req.path);
    const forAccount = isAccountPath(req.path);
    const forFederation = isFederationPath(req.path);
    if (!forProvider && !forAccount && !forFederation && !req.path.startsWith(INTERACTION_PREFIX)) return next();
    setSignInHeaders(res, req.path);
    if (forFederation) return federation.router(req, res, next);
    const current = await fresh();
    if (forProvider) {
      req.url = inCanonicalForm(req.url);
      if (answerFromCopy(current.documents, req, res, config.Discovery.ResponseCacheInterval)) return;
      if (req.method === 'GET') req.url = withOfflineConsent(req.url);
      forwardedAsExpressSees(req, deps.issuer);
      if (req.method === 'POST' && req.path === `${OIDC_ROUTES.end_session}/confirm`)
        forgetSourceCookie(req, res, config.Migration.SourceSessions.CookieName);
      if (req.method === 'GET' && req.path === OIDC_ROUTES.authorization)
        await carryOver(current.provider, req, res, requestOf(req.query));
      return current.callback(req, res);
    }
    if (forAccount)
      return recovery(req, res, (error?: unknown) => (error ? next(error) : current.account(req, res, next)));
    if (req.method === 'GET' && (await resumedWithSourceSession(current.provider, req, res, carryOver))) return;
    current.interactions(req, res, next);
  });
  return router;
}
