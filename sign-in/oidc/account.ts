import { randomUUID } from 'node:crypto';
import express, { Router, type Request, type Response } from 'express';
import type Provider from 'oidc-provider';
import { toDataURL } from 'qrcode';
import { z } from 'zod';
import { base32Decode } from '../../platform/security/base32';
import { protectSecret, protectText, unprotectText, type KeyRing } from '../../platform/security/data-protection';
import { authenticatorUri, matchTotp, newAuthenticatorKey } from '../../platform/security/totp';
import type { Db } from '../../platform/store/database';
import { enrolTotp, findTotpCredential } from '../../platform/store/mfa';
import { mfaEnrolPage, mfaOnPage, notSignedInPage, reauthPage, signInAgainPage } from './pages';
import { checkPassword } from './credentials';
import { signInErrorPage } from './interactions';
import type { AppConfig } from '../../platform/config/schema';
import { findAccountUser } from '../../platform/store/users';
import { FIELD_BOUNDS } from '../../platform/security/field-bounds';
import { formField } from './forms';

/** How long an enrolment page stays good for. */
const PENDING_MINUTES = 15;
const ACTION = '/account/mfa';

/**
 * What the enrolment form carries between its two steps: the new key, for this user, until a deadline, sealed under
 * the data-protection ring, so nothing is stored before the user has proven the key works and a form made for one
 * user cannot enrol another.
 */
const pendingSchema = z.object({ userId: z.string(), key: z.string(), until: z.number() });
type Pending = z.infer<typeof pendingSchema>;

const codeForm = z.object({ pending: z.string().max(2048), code: z.string().max(16) });
const passwordForm = z.object({ password: formField(FIELD_BOUNDS.password) });

/**
 * How recent a sign-in must be to change how the user signs in (ASP.NET Identity's UI and most providers ask for the
 * password again before such a change): a session lasts 14 days, and an unattended browser must not be enough.
 */
const RECENT_SIGN_IN_MINUTES = 5;

export interface AccountDependencies {
  provider: Provider;
  db: Db;
  ring: KeyRing;
  issuer: string;
  config: AppConfig;
}

/**
 * `/account/mfa`: a signed-in user (the provider's session cookie) without two-step verification enrols an
 * authenticator app. The session cookie is SameSite=Lax, so a form posted from another site arrives without it.
 */
export function accountRouter({ provider, db, ring, issuer, config }: AccountDependencies): Router {
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 5 });
  const html = (res: Response, status: number, body: string) =>
    res.status(status).set('cache-control', 'no-store').type('html').send(body);

  /** The signed-in user, and whether the sign-in (the session's login time) is recent; undefined when none. */
  async function signedInUser(req: Request, res: Response) {
    const session = await provider.Session.get(provider.createContext(req, res));
    if (!session.accountId) return undefined;
    const user = await findAccountUser(db, session.accountId);
    const ageSeconds = Date.now() / 1000 - (session.loginTs ?? 0);
    return user && { ...user, recent: ageSeconds <= RECENT_SIGN_IN_MINUTES * 60 };
  }

  /** A sign-in that is not recent: the password again (or, without one, a new sign-in) before anything changes. */
  function reauthentication(res: Response, user: { email: string; hasPassword: boolean }, error?: string) {
    if (!user.hasPassword) return html(res, 403, signInAgainPage(RECENT_SIGN_IN_MINUTES));
    html(res, error ? 400 : 200, reauthPage(ACTION, user.email, error));
  }

  async function enrolment(res: Response, email: string, pending: Pending, error?: string) {
    const qr = await toDataURL(authenticatorUri(new URL(issuer).host, email, pending.key), { margin: 1 });
    html(
      res,
      error ? 400 : 200,
      mfaEnrolPage(ACTION, qr, pending.key, protectText(JSON.stringify(pending), ring), error),
    );
  }
  const fresh = (userId: string): Pending => ({
    userId,
    key: newAuthenticatorKey(),
    until: Date.now() + PENDING_MINUTES * 60_000,
  });

  function openPending(sealed: string, userId: string): Pending | undefined {
    try {
      const pending = pendingSchema.parse(JSON.parse(unprotectText(sealed, ring)));
      return pending.userId === userId && pending.until > Date.now() ? pending : undefined;
    } catch {
      return undefined;
    }
  }

  router.get(ACTION, async (req, res) => {
    const user = await signedInUser(req, res);
    if (!user) return html(res, 401, notSignedInPage());
    if (await findTotpCredential(db, user.id)) return html(res, 200, mfaOnPage());
    if (!user.recent) return reauthentication(res, user);
    await enrolment(res, user.email, fresh(user.id));
  });

  router.post(ACTION, form, async (req, res) => {
    const user = await signedInUser(req, res);
    if (!user) return html(res, 401, notSignedInPage());
    if (await findTotpCredential(db, user.id)) return html(res, 200, mfaOnPage());
    // The password form: checked as at sign-in (counted toward the lockout, the same time whatever the outcome).
    if (req.body && typeof req.body === 'object' && 'password' in req.body) {
      const entered = passwordForm.safeParse(req.body);
      const check = entered.success ? await checkPassword(db, config, user.email, entered.data.password) : undefined;
      if (check?.status !== 'valid' || check.userId !== user.id)
        return reauthentication(res, user, 'That password is not right.');
      return enrolment(res, user.email, fresh(user.id));
    }
    // A code form carries a pending enrolment sealed for this user, made only after a recent sign-in or the password.
    const parsed = codeForm.safeParse(req.body);
    const pending = parsed.success ? openPending(parsed.data.pending, user.id) : undefined;
    if (!parsed.success || !pending)
      return enrolment(res, user.email, fresh(user.id), 'This page has expired; scan the new code below.');
    const secret = base32Decode(pending.key);
    const step = await matchTotp(secret, parsed.data.code.replace(/\s/g, ''), null);
    if (step === undefined)
      return enrolment(res, user.email, pending, 'That code is not right; check the time on your phone and try again.');
    await enrolTotp(db, randomUUID(), user.id, protectSecret(secret, ring), step);
    html(res, 200, mfaOnPage());
  });

  router.use(signInErrorPage);
  return router;
}
