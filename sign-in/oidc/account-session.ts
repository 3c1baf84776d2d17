import type { Request, Response } from 'express';
import type Provider from 'oidc-provider';
import type { AppConfig } from '../../platform/config/config-schema';
import type { Mailer } from '../../platform/email/mailer';
import { productName, sendPage } from '../../platform/http/html';
import type { KeyRing } from '../../platform/security/data-protection';
import { FORM_TOKEN_FIELD, formToken, isFormToken } from './account/form-token';
import { recordAuditEvent } from '../store/audit-events';
import type { Db } from '../../platform/store/database';
import { findAccountUser } from '../../platform/store/users';
import type { SignOut } from '../sign-out-notices';
import { accountChangedMail, type AccountChange } from '../recovery/mails';
import { formExpiredPage, notSignedInPage } from './account-pages';
import { checkPassword } from './credentials';

export interface AccountDependencies {
  provider: Provider;
  db: Db;
  ring: KeyRing;
  issuer: string;
  config: AppConfig;
  signOut: SignOut;
  /** The notice of each change to how the user signs in. */
  mailer: Mailer;
}

/**
 * Who is using the account pages: the signed-in user of a page or of a form post (with the session's anti-forgery
 * token), whether the sign-in is recent, the password check, and what follows a change to how the user signs in.
 */
export function accountSessions(deps: AccountDependencies) {
  const { provider, db, ring, config, signOut } = deps;
  const html = sendPage;
  /**
   * How recent a sign-in must be to change how the user signs in without the password (ASP.NET Identity's UI and most
   * providers ask for the password again before such a change): a session lasts 14 days, and an unattended browser
   * must not be enough.
   */
  const recentMinutes = config.Auth.RecentSignInMinutes;

  /** The signed-in user, and whether the sign-in (the session's login time) is recent; undefined when none. */
  async function signedInUser(req: Request, res: Response) {
    const session = await provider.Session.get(provider.createContext(req, res));
    if (!session.accountId) return undefined;
    const user = await findAccountUser(db, session.accountId);
    const ageSeconds = Date.now() / 1000 - (session.loginTs ?? 0);
    const token = formToken(ring.primary.key, session.jti);
    return user && { ...user, recent: ageSeconds <= recentMinutes * 60, sessionId: session.jti, session, token };
  }
  type SignedInUser = NonNullable<Awaited<ReturnType<typeof signedInUser>>>;

  /**
   * The signed-in user of a form post whose form carries this session's anti-forgery token; undefined when the page
   * has answered instead (401 not signed in; 400 without the token, as ASP.NET Core's antiforgery filter answers).
   */
  async function poster(req: Request, res: Response): Promise<SignedInUser | undefined> {
    const user = await signedInUser(req, res);
    if (!user) return void html(res, 401, notSignedInPage());
    const body: unknown = req.body;
    const given = body && typeof body === 'object' ? (body as Record<string, unknown>)[FORM_TOKEN_FIELD] : undefined;
    if (!isFormToken(ring.primary.key, user.sessionId, given)) return void html(res, 400, formExpiredPage());
    return user;
  }

  /**
   * After a change to how the user signs in, every other sign-in ends (sessions, refresh tokens, grants, through the
   * one path a reset takes) and this browser stays signed in, as ASP.NET Identity's UI calls RefreshSignInAsync after
   * the security stamp changed: its session is kept, without the authorizations whose grants ended with the rest.
   * The user is told by mail either way.
   */
  async function afterChange(req: Request, user: SignedInUser, change: AccountChange, endSignIns: boolean) {
    if (endSignIns) {
      const sessions = await signOut.everywhere(user.id);
      user.session.authorizations = undefined;
      await user.session.persist();
      const detail = { sessions: Math.max(0, sessions - 1), reason: change };
      await recordAuditEvent(db, { type: 'sessions-revoked', userId: user.id, clientAddress: req.ip, detail });
    }
    void deps.mailer.send(accountChangedMail(productName(), user.email, change, endSignIns));
  }

  /** Whether the signed-in user typed their own password: checked as at sign-in (it counts toward the lockout). */
  async function isTheirPassword(user: { id: string; email: string }, password: string | undefined) {
    if (password === undefined) return false;
    const check = await checkPassword(db, config, user.email, password);
    return check.status === 'valid' && check.userId === user.id;
  }

  return { recentMinutes, signedInUser, poster, afterChange, isTheirPassword };
}

export type SignedInUser = NonNullable<Awaited<ReturnType<ReturnType<typeof accountSessions>['signedInUser']>>>;
