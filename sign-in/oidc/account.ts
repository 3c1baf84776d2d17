import { randomInt, randomUUID } from 'node:crypto';
import express, { Router, type Request, type Response } from 'express';
import { toDataURL } from 'qrcode';
import { z } from 'zod';
import { base32Decode } from '../../platform/security/base32';
import { protectSecret, protectText, unprotectText } from '../../platform/security/data-protection';
import { authenticatorUri, matchTotp, newAuthenticatorKey } from '../../platform/security/totp';
import { enrolTotp, findTotpCredential } from '../store/mfa';
import { sendPage } from '../../platform/http/html';
import { mfaEnrolPage, notSignedInPage, reauthPage, signInAgainPage } from './pages';
import { accountPage, mfaOffPage, mfaSettingsPage, recoveryCodesPage, signedOutEverywherePage } from './account-pages';
import { countRecoveryCodes, removeMfa, replaceRecoveryCodes, setPasswordHash } from '../store/accounts';
import { recordAuditEvent } from '../store/audit-events';
import { listSessionsOf } from '../../platform/store/oidc-payloads';
import { hashPassword } from '../../platform/security/password-hashing';
import { passwordPolicyViolations } from '../../platform/security/password-policy';
import { recoveryCodeHash } from '../../platform/security/totp';
import { policyInWords } from '../recovery/router';
import { signInErrorPage } from './error-page';
import { FIELD_BOUNDS } from '../../platform/security/field-bounds';
import { formField } from './forms';
import { accountSessions, type AccountDependencies, type SignedInUser } from './account-session';

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
const changeForm = z.object({
  current: formField(FIELD_BOUNDS.password),
  password: formField(FIELD_BOUNDS.password),
  confirm: formField(FIELD_BOUNDS.password),
});

const ACCOUNT_PAGE = '/account';
const RECOVERY_CODE_COUNT = 10;
/** ASP.NET Core Identity's recovery-code alphabet: no 0/O, 1/I/L or vowels that spell words. */
const CODE_ALPHABET = '23456789BCDFGHJKMNPQRTVWXY';
/** A recovery code as ASP.NET Core Identity makes them: two groups of five, `XXXXX-XXXXX`. */
function newRecoveryCode(): string {
  const chars = Array.from({ length: 10 }, () => CODE_ALPHABET[randomInt(CODE_ALPHABET.length)]).join('');
  return `${chars.slice(0, 5)}-${chars.slice(5)}`;
}

/**
 * `/account` and `/account/mfa`: a signed-in user (the provider's session cookie) changes the password, ends every
 * sign-in, and turns two-step sign-in on or off. Every form carries the session's anti-forgery token
 * (platform/security/form-token.ts): the session cookie is SameSite=Lax, which a form posted from another site's page
 * in the same site (a sibling subdomain) or an older browser does not stop.
 */
export function accountRouter(deps: AccountDependencies): Router {
  const { db, ring, issuer, config, signOut } = deps;
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 5 });
  const html = sendPage;
  const { recentMinutes, signedInUser, poster, afterChange, isTheirPassword } = accountSessions(deps);

  /** A sign-in that is not recent: the password again (or, without one, a new sign-in) before anything changes. */
  function reauthentication(res: Response, user: SignedInUser, error?: string) {
    if (!user.hasPassword) return html(res, 403, signInAgainPage(recentMinutes));
    html(res, error ? 400 : 200, reauthPage(ACTION, user.email, user.token, error));
  }

  async function enrolment(res: Response, user: SignedInUser, pending: Pending, error?: string) {
    const qr = await toDataURL(authenticatorUri(new URL(issuer).host, user.email, pending.key), { margin: 1 });
    const sealed = protectText(JSON.stringify(pending), ring);
    html(res, error ? 400 : 200, mfaEnrolPage(ACTION, qr, pending.key, sealed, user.token, error));
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

  /** The page of a user who has two-step sign-in on: new codes or off. */
  const settings = async (user: SignedInUser, error?: string) =>
    mfaSettingsPage(await countRecoveryCodes(db, user.id), user.hasPassword, user.token, error);

  /** The user who may enrol now; undefined when the page has answered (not signed in, no token, enrolled already). */
  async function enrolling(req: Request, res: Response, posted: boolean) {
    const user = posted ? await poster(req, res) : await signedInUser(req, res);
    if (!user) return void (res.headersSent || html(res, 401, notSignedInPage()));
    if (await findTotpCredential(db, user.id)) return void html(res, 200, await settings(user));
    return user;
  }

  router.get(ACTION, async (req, res) => {
    const user = await enrolling(req, res, false);
    if (!user) return;
    if (!user.recent) return reauthentication(res, user);
    await enrolment(res, user, fresh(user.id));
  });

  router.post(ACTION, form, async (req, res) => {
    const user = await enrolling(req, res, true);
    if (!user) return;
    // The password form: checked as at sign-in (counted toward the lockout, the same time whatever the outcome).
    if (req.body && typeof req.body === 'object' && 'password' in req.body) {
      if (!(await isTheirPassword(user, passwordForm.safeParse(req.body).data?.password)))
        return reauthentication(res, user, 'That password is not right.');
      return enrolment(res, user, fresh(user.id));
    }
    // A code form carries a pending enrolment sealed for this user, made only after a recent sign-in or the password.
    // Without one that opens, a new key is shown only where the first page would show one: after a recent sign-in.
    const parsed = codeForm.safeParse(req.body);
    const pending = parsed.success ? openPending(parsed.data.pending, user.id) : undefined;
    if (!parsed.success || !pending) {
      if (!user.recent)
        return reauthentication(res, user, 'This page has expired; enter your password to start again.');
      return enrolment(res, user, fresh(user.id), 'This page has expired; scan the new code below.');
    }
    const secret = base32Decode(pending.key);
    const step = await matchTotp(secret, parsed.data.code.replace(/\s/g, ''), null);
    if (step === undefined)
      return enrolment(res, user, pending, 'That code is not right; check the time on your phone and try again.');
    await enrolTotp(db, randomUUID(), user.id, protectSecret(secret, ring), step);
    await recordAuditEvent(db, { type: 'mfa-enrolled', userId: user.id, clientAddress: req.ip });
    const codes = await newRecoveryCodes(user.id);
    await afterChange(req, user, 'mfa-enrolled', true);
    html(res, 200, recoveryCodesPage(codes, true));
  });

  /** Ten new recovery codes (the earlier ones stop working): stored as keyed hashes, shown once. */
  async function newRecoveryCodes(userId: string): Promise<string[]> {
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
    await replaceRecoveryCodes(
      db,
      userId,
      codes.map((code, i) => ({
        id: randomUUID(),
        label: `rc-${i + 1}`,
        hash: recoveryCodeHash(code, ring.primary.key),
      })),
    );
    return codes;
  }

  /**
   * A change to how the user signs in: the password again when there is one (checked as at sign-in), else a recent
   * sign-in. Answers the page to show instead when it is not given.
   */
  async function confirmedByPassword(req: Request, user: SignedInUser): Promise<string | undefined> {
    if (!user.hasPassword) return user.recent ? undefined : signInAgainPage(recentMinutes);
    if (await isTheirPassword(user, passwordForm.safeParse(req.body).data?.password)) return undefined;
    return settings(user, 'That password is not right.');
  }

  /** A change to two-step sign-in while it is on: signed in, and the password again (confirmedByPassword). */
  const changingMfa =
    (change: (req: Request, res: Response, user: SignedInUser) => Promise<unknown>): express.RequestHandler =>
    async (req, res) => {
      const user = await poster(req, res);
      if (!user) return;
      if (!(await findTotpCredential(db, user.id))) return res.redirect(303, ACTION);
      const refused = await confirmedByPassword(req, user);
      if (refused) return html(res, 400, refused);
      await change(req, res, user);
    };

  router.post(
    `${ACTION}/recovery-codes`,
    form,
    changingMfa(async (req, res, user) => {
      const codes = await newRecoveryCodes(user.id);
      await recordAuditEvent(db, { type: 'recovery-codes-regenerated', userId: user.id, clientAddress: req.ip });
      // New codes leave the security stamp as it is in ASP.NET Identity (GenerateNewTwoFactorRecoveryCodesAsync):
      // the other sign-ins stay; the owner is told.
      await afterChange(req, user, 'recovery-codes-regenerated', false);
      html(res, 200, recoveryCodesPage(codes, false));
    }),
  );

  router.post(
    `${ACTION}/off`,
    form,
    changingMfa(async (req, res, user) => {
      await removeMfa(db, user.id);
      await recordAuditEvent(db, { type: 'mfa-removed', userId: user.id, clientAddress: req.ip });
      await afterChange(req, user, 'mfa-removed', true);
      html(res, 200, mfaOffPage());
    }),
  );

  /** The account page: the password, two-step sign-in, where the user is signed in. */
  async function overview(res: Response, user: SignedInUser, notice?: string, error?: string, status = 200) {
    const sessions = await listSessionsOf(db, user.id);
    html(
      res,
      status,
      accountPage(
        {
          email: user.email,
          hasPassword: user.hasPassword,
          mfaOn: (await findTotpCredential(db, user.id)) !== undefined,
          sessions: sessions.map((s) => ({ ...s, current: s.id === user.sessionId })),
          passwordRules: policyInWords(config.Auth.PasswordPolicy),
          formToken: user.token,
        },
        notice,
        error,
      ),
    );
  }

  router.get(ACCOUNT_PAGE, async (req, res) => {
    const user = await signedInUser(req, res);
    if (!user) return html(res, 401, notSignedInPage());
    await overview(res, user);
  });

  /** A new password, with the current one (checked as at sign-in: it counts toward the lockout). */
  router.post(`${ACCOUNT_PAGE}/password`, form, async (req, res) => {
    const user = await poster(req, res);
    if (!user) return;
    const parsed = changeForm.safeParse(req.body);
    if (!parsed.success || !user.hasPassword) return overview(res, user, undefined, 'Fill in all three fields.', 400);
    const { current, password, confirm } = parsed.data;
    if (!(await isTheirPassword(user, current)))
      return overview(res, user, undefined, 'Your current password is not right.', 400);
    if (password !== confirm) return overview(res, user, undefined, 'The two new passwords are not the same.', 400);
    const violations = passwordPolicyViolations(password, config.Auth.PasswordPolicy);
    if (violations.length > 0) return overview(res, user, undefined, `The new password ${violations.join('; ')}.`, 400);
    await setPasswordHash(db, user.id, await hashPassword(password));
    await recordAuditEvent(db, { type: 'password-changed', userId: user.id, clientAddress: req.ip });
    await afterChange(req, user, 'password-changed', true);
    await overview(res, user, 'Your password is changed. Every other device and application was signed out.');
  });

  /** "Sign out everywhere": every session, refresh token and grant, this browser's session too. */
  router.post(`${ACCOUNT_PAGE}/sessions/end`, form, async (req, res) => {
    const user = await poster(req, res);
    if (!user) return;
    const sessions = await signOut.everywhere(user.id);
    await recordAuditEvent(db, {
      type: 'sessions-revoked',
      userId: user.id,
      clientAddress: req.ip,
      detail: { sessions },
    });
    html(res, 200, signedOutEverywherePage(sessions));
  });

  router.use(signInErrorPage);
  return router;
}
