import type { IncomingMessage, ServerResponse } from 'node:http';
import type Provider from 'oidc-provider';
import type { Session } from 'oidc-provider';
import type { AppConfig } from '../../platform/config/config-schema';
import { logger } from '../../platform/observability/logger';
import { sourceSessions } from '../../platform/observability/metrics';
import type { KeyRing } from '../../platform/security/data-protection';
import type { Db } from '../../platform/store/database';
import { recordAuditEvent } from '../store/audit-events';
import { findSourceSessionUser } from '../store/source-session-users';
import type { SourceReadThrough } from '../source-read-through';
import { TTL } from './provider-configuration/ttl';
import { findClient } from '../../platform/store/clients';
import { listProvisionedApps } from '../../platform/store/provisions';
import { settingsOf } from './provider-clients';
import { RESOURCE_PREFIX, resourceOfScopes, storedApiResources } from './resources';
import {
  openSourceTicket,
  requestCookies,
  sourceCookieOf,
  sourceKeyRingReader,
  type SourceSignIn,
} from './source-session-tickets';

export interface SourceSessionDependencies {
  db: Db;
  ring: KeyRing;
  config: AppConfig;
  readThrough?: SourceReadThrough;
}

/** Why a source sign-in is not carried over, once its cookie opened. */
type Refusal = 'expired' | 'unknown-user' | 'tombstoned' | 'inactive' | 'stamp-changed' | 'signed-out';

/**
 * Whether the source sign-in still stands for a user here: not expired (CookieAuthenticationHandler's check of
 * `.expires`), the user here, active, not deleted or deactivated, with the stamp the cookie was issued under
 * (SecurityStampValidator's rule) and no end of its sessions here since the cookie was issued. A user the last sweep
 * missed is read through first while that window is open.
 */
async function refusal(deps: SourceSessionDependencies, signIn: SourceSignIn): Promise<Refusal | undefined> {
  if (signIn.expiresAt && signIn.expiresAt.getTime() <= Date.now()) return 'expired';
  let user = await findSourceSessionUser(deps.db, signIn.subject);
  if (!user && signIn.email && deps.readThrough && (await deps.readThrough.user(signIn.email)) === 'migrated')
    user = await findSourceSessionUser(deps.db, signIn.subject);
  if (!user) return 'unknown-user';
  if (user.tombstoned) return 'tombstoned';
  if (!user.active) return 'inactive';
  if (!user.securityStamp || user.securityStamp !== signIn.securityStamp) return 'stamp-changed';
  const issued = signIn.issuedAt ?? new Date(signIn.authTime * 1000);
  if (user.sessionsRevokedAt && user.sessionsRevokedAt >= issued) return 'signed-out';
  return undefined;
}

/**
 * The grant a carried-over session needs for the client to answer `prompt=none` as the source did: what the request
 * asks for, as the consent step grants it at once for a client without RequireConsent. Not when the client requires
 * consent or has provisioning apps the user is not in yet: those go through the consent step (a page, or
 * consent_required for prompt=none), which provisions.
 */
async function grantWithoutPage(
  provider: Provider,
  db: Db,
  session: Session,
  clientId: string,
  scope: string | undefined,
): Promise<void> {
  if (session.grantIdFor(clientId)) return;
  const client = await findClient(db, clientId);
  if (!client || settingsOf(client).RequireConsent) return;
  const held = new Set(await listProvisionedApps(db, session.accountId!));
  if ((client.provisioning_apps ?? []).some((app) => !held.has(app))) return;
  const requested = (scope ?? '').split(' ').filter(Boolean);
  const grant = new provider.Grant({ accountId: session.accountId!, clientId });
  grant.addOIDCScope(requested.join(' '));
  const resource = await resourceOfScopes(storedApiResources(db), requested);
  if (resource) grant.addResourceScope(`${RESOURCE_PREFIX}${resource}`, requested.join(' '));
  session.grantIdFor(clientId, await grant.save());
}

const SESSION_COOKIE_OPTIONS = { httpOnly: true, sameSite: 'lax' } as const;

/**
 * The provider's session for the source sign-in, made as oidc-provider makes one at a finished login
 * (Session.loginAccount) and kept by its adapter: the source's auth_time, amr and idp (session-idp.ts), and the source's session id as the
 * `sid` of the requesting client (process_response_types.js puts `session.sidFor(client)` in ID tokens; back-channel
 * logout sends it). A browser already holding a session of this user keeps it, the client only gaining the sid.
 * The `_session` cookie, signed with the provider's cookie keys, goes on the answer and into this request's cookies.
 * Answers whether anything was opened or added.
 */
async function openSession(
  provider: Provider,
  req: IncomingMessage,
  res: ServerResponse,
  signIn: SourceSignIn,
  clientId: string | undefined,
  scope: string | undefined,
  db: Db,
): Promise<boolean> {
  const ctx = provider.createContext(req, res);
  ctx.cookies.secure = ctx.secure;
  const name = provider.cookieName('session');
  const existingId = ctx.cookies.get(name, { signed: true });
  const existing = existingId ? await provider.Session.find(existingId) : undefined;
  // The service's own sign-in of someone else in this browser stands: a source cookie never replaces it.
  if (existing?.accountId && existing.accountId !== signIn.subject) return false;
  const needsSid = (s: Session) => !!clientId && !!signIn.sessionId && !s.sidFor(clientId);
  if (existing?.accountId === signIn.subject) {
    if (!clientId || (!needsSid(existing) && existing.grantIdFor(clientId))) return false;
    if (needsSid(existing)) existing.sidFor(clientId, signIn.sessionId!);
    await grantWithoutPage(provider, db, existing, clientId, scope);
    await existing.persist();
    return true;
  }
  const SessionModel = provider.Session as unknown as new (payload: object) => Session;
  const session = new SessionModel({
    accountId: signIn.subject,
    loginTs: signIn.authTime,
    amr: signIn.amr,
    idp: signIn.idp,
  });
  if (needsSid(session)) session.sidFor(clientId!, signIn.sessionId!);
  if (clientId) await grantWithoutPage(provider, db, session, clientId, scope);
  if (!signIn.persistent) session.transient = true;
  await session.save(TTL!.Session as number);
  ctx.cookies.set(name, session.jti, {
    ...SESSION_COOKIE_OPTIONS,
    ...(signIn.persistent ? { expires: new Date(session.exp * 1000) } : {}),
  });
  const set = ([] as string[]).concat((res.getHeader('set-cookie') as string[] | string | undefined) ?? []);
  const ours = set
    .map((line) => line.split(';')[0])
    .filter((pair) => pair.startsWith(`${name}=`) || pair.startsWith(`${name}.sig=`));
  const others = (req.headers.cookie ?? '')
    .split(';')
    .map((pair) => pair.trim())
    .filter((pair) => pair && !pair.startsWith(`${name}=`) && !pair.startsWith(`${name}.sig=`));
  req.headers.cookie = [...others, ...ours].join('; ');
  return true;
}

/**
 * The cutover's carried-over browser sessions (Migration:SourceSessions): until `Until`, a request to the
 * authorization endpoint or a sign-in page with the source's authentication cookie opens the service's own session
 * for the user that cookie names, and the flow goes on with no page. Anything that does not hold up is as if there
 * were no cookie. Each carry-over is audited; each outcome counted (source_sessions_total); the cookie is never logged.
 * Answers whether a session was opened.
 */
export function sourceSessionCarrier(deps: SourceSessionDependencies) {
  const settings = deps.config.Migration.SourceSessions;
  const applicationName = deps.config.Migration.SourceDataProtection.ApplicationName;
  const keyRing = sourceKeyRingReader(deps.db, deps.ring, deps.config.Migration.SourceDataProtection.KeyRingPath);
  const open = () => settings.Until !== undefined && Date.now() < settings.Until.getTime();

  return async function carryOver(
    provider: Provider,
    req: IncomingMessage & { ip?: string },
    res: ServerResponse,
    request: { clientId?: string; scope?: string },
  ): Promise<boolean> {
    const { clientId, scope } = request;
    if (!open() || !applicationName) return false;
    const value = sourceCookieOf(req.headers.cookie, settings.CookieName);
    if (!value) return false;
    try {
      const signIn = openSourceTicket(await keyRing(), applicationName, settings.Scheme, value);
      const refused = typeof signIn === 'string' ? signIn : await refusal(deps, signIn);
      if (refused || typeof signIn === 'string') {
        sourceSessions.inc({ outcome: refused });
        logger.info(`source-sessions: a source cookie was not carried over: ${refused}`);
        return false;
      }
      if (!(await openSession(provider, req, res, signIn, clientId, scope, deps.db))) return false;
      sourceSessions.inc({ outcome: 'carried-over' });
      const detail = { idp: signIn.idp, ...(signIn.sessionId ? { sessionId: signIn.sessionId } : {}) };
      await recordAuditEvent(deps.db, {
        type: 'source-session-carried-over',
        userId: signIn.subject,
        clientId,
        clientAddress: req.ip,
        detail,
      });
      return true;
    } catch (error) {
      // A store or key ring that fails is the normal sign-in for this browser, not a failed request.
      sourceSessions.inc({ outcome: 'error' });
      logger.error(`source-sessions: a source cookie could not be checked: ${(error as Error).message}`);
      return false;
    }
  };
}

/**
 * At sign-out, the source's cookie (and its chunks) is deleted too, as the source's own sign-out (SignOutAsync) deletes
 * it: otherwise the next authorization would open a session from it again while the window is open. Only a cookie the
 * source set without a Domain attribute (ASP.NET Core's default) is deleted this way.
 */
export function forgetSourceCookie(req: IncomingMessage, res: ServerResponse, cookieName: string): void {
  const names = Object.keys(requestCookies(req.headers.cookie)).filter(
    (name) =>
      name === cookieName || (name.startsWith(`${cookieName}C`) && /^\d+$/.test(name.slice(cookieName.length + 1))),
  );
  if (names.length === 0) return;
  const set = ([] as string[]).concat((res.getHeader('set-cookie') as string[] | string | undefined) ?? []);
  const gone = names.map((name) => `${name}=; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT; samesite=lax; httponly`);
  res.setHeader('set-cookie', [...set, ...gone]);
}

export type SourceSessionCarrier = ReturnType<typeof sourceSessionCarrier>;
