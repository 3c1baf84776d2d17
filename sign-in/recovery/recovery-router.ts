import express, { Router, type Request, type Response } from 'express';
import { storedClientLimit } from '../rate-limit';
import { logger } from '../../platform/observability/logger';
import { z } from 'zod';
import type { AppConfig } from '../../platform/config/config-schema';
import type { Mailer } from '../../platform/email/mailer';
import { productName, sendPage } from '../../platform/http/html';
import { FIELD_BOUNDS } from '../../platform/security/field-bounds';
import { hashPassword } from '../../platform/security/password-hashing';
import { passwordPolicyViolations } from '../../platform/security/password-policy';
import { createAccountToken, peekAccountToken, takeAccountToken } from '../store/account-tokens';
import { findRecoveryUser, markEmailConfirmed, setPasswordHash, type RecoveryUser } from '../store/accounts';
import { recordAuditEvent } from '../store/audit-events';
import type { Db } from '../../platform/store/database';
import type { SignOut } from '../sign-out-notices';
import { emailForm, formField } from '../oidc/forms';
import { confirmationMail, noPasswordMail, passwordResetMail, registrationAttemptMail } from './mails';
import { countHit } from '../../platform/store/rate-limits';
import { signInErrorPage } from '../oidc/error-page';
import {
  backToSignIn,
  confirmationExpiredPage,
  emailConfirmedPage,
  forgotPasswordPage,
  linkExpiredPage,
  resetDonePage,
  resetLinkSentPage,
  resetPasswordPage,
} from './recovery-pages';

/** The uid of the sign-in "Forgot your password?" was opened from: oidc-provider's uids are URL-safe and short. */
const returnUidOf = (value: unknown) =>
  typeof value === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(value) ? value : undefined;

/** How long the work of a reset request waits after its answer went. */
const AFTER_THE_ANSWER_MS = 25;

export const RECOVERY_PATHS = {
  forgot: '/account/forgot-password',
  reset: '/account/reset-password',
  confirm: '/account/confirm-email',
} as const;

export interface RecoveryDependencies {
  db: Db;
  config: AppConfig;
  mailer: Mailer;
  /** Api:PublicUrl: every link a mail holds starts with it, never with the request's Host header. */
  publicUrl: string;
}

const resetForm = z.object({
  token: formField(128),
  password: formField(FIELD_BOUNDS.password),
  confirm: formField(FIELD_BOUNDS.password),
});

/** The password policy in words, above the form that must meet it. */
export function policyInWords(policy: AppConfig['Auth']['PasswordPolicy']): string {
  const parts = [`at least ${policy.MinLength} characters`];
  if (policy.RequireDigit) parts.push('a digit');
  if (policy.RequireUppercase) parts.push('an uppercase letter');
  if (policy.RequireLowercase) parts.push('a lowercase letter');
  if (policy.RequireNonAlphanumeric) parts.push('a character that is not a letter or digit');
  return `Your new password needs ${parts.join(', ')}.`;
}

/**
 * Sends the mails of account recovery: a reset link (or, for an account without a password, how to sign in), a
 * confirmation link. Each link's token is made here and leaves only in the mail.
 */
export function recoveryMails({ db, config, mailer, publicUrl }: RecoveryDependencies) {
  const product = () => productName();
  return {
    /**
     * What a reset request for a known user sends, within the per-account budget: whether a mail went out. The
     * mail is not awaited by the caller's page (its duration would tell that the account exists).
     */
    async passwordReset(user: RecoveryUser): Promise<boolean> {
      const { TokenMinutes, PermitLimit, WindowMinutes } = config.Auth.PasswordReset;
      const budget = { limit: PermitLimit, windowMinutes: WindowMinutes };
      // Without a password the mail holds no link, but its token is made all the same: the budget bounds these too.
      const token = await createAccountToken(
        db,
        'password-reset',
        user.id,
        user.password_hash ? TokenMinutes : 0,
        budget,
      );
      if (token === undefined) return false;
      if (!user.password_hash) void mailer.send(noPasswordMail(product(), user.email));
      else {
        const url = `${publicUrl}${RECOVERY_PATHS.reset}?token=${token}`;
        void mailer.send(passwordResetMail(product(), user.email, url, TokenMinutes));
      }
      return true;
    },
    async confirmation(user: RecoveryUser): Promise<boolean> {
      const { PermitLimit, WindowMinutes } = config.Auth.PasswordReset;
      const budget = { limit: PermitLimit, windowMinutes: WindowMinutes };
      const minutes = config.Auth.EmailConfirmationTokenMinutes;
      const token = await createAccountToken(db, 'email-confirmation', user.id, minutes, budget);
      if (token === undefined) return false;
      void mailer.send(confirmationMail(product(), user.email, `${publicUrl}${RECOVERY_PATHS.confirm}?token=${token}`));
      await recordAuditEvent(db, { type: 'email-confirmation-sent', userId: user.id });
      return true;
    },
    /**
     * Someone registered the user's address again: the owner is told, within the per-account mail budget of
     * Auth:PasswordReset (so registrations cannot flood a mailbox). Not awaited by the caller's answer.
     */
    async registrationAttempt(user: RecoveryUser): Promise<boolean> {
      const { PermitLimit, WindowMinutes } = config.Auth.PasswordReset;
      if ((await countHit(db, 'registration-notice:account', user.id, WindowMinutes * 60)) > PermitLimit) return false;
      const forgot = `${publicUrl}${RECOVERY_PATHS.forgot}`;
      void mailer.send(registrationAttemptMail(product(), user.email, forgot, user.password_hash !== null));
      return true;
    },
  };
}

export type RecoveryMails = ReturnType<typeof recoveryMails>;

type RecoveryRouterDependencies = RecoveryDependencies & { mails: RecoveryMails; signOut: SignOut };

/**
 * Password reset by e-mail and e-mail confirmation, as ASP.NET Identity's default UI has them: "Forgot your
 * password?" asks for an address and answers the same, in the same time, whether or not an account has it; the link
 * opens a form for the new password; a confirmation link confirms the address.
 */
export function recoveryRouter(deps: RecoveryRouterDependencies): Router {
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 5 });
  const forgot = forgotPassword(deps);
  router.get(RECOVERY_PATHS.forgot, forgot.show);
  router.post(RECOVERY_PATHS.forgot, forgot.perAddress, form, forgot.post);
  router.get(RECOVERY_PATHS.reset, showResetForm(deps));
  router.post(RECOVERY_PATHS.reset, form, postNewPassword(deps));
  router.get(RECOVERY_PATHS.confirm, confirmEmail(deps));
  // A form no page can read is a 4xx page; a fault (the store failing after the new password was hashed) a logged 500.
  router.use(signInErrorPage);
  return router;
}

/** "Forgot your password?": the page, and its post, answered before anything looks at the address. */
function forgotPassword({ db, config, mails }: RecoveryRouterDependencies) {
  const { AddressPermitLimit, WindowMinutes, TokenMinutes } = config.Auth.PasswordReset;
  const tooMany = `Too many requests from this network; try again in ${WindowMinutes} minute${WindowMinutes === 1 ? '' : 's'}.`;

  /** What a reset request for a known address does (a token, a mail, an event): after the answer has gone. */
  async function requestReset(email: string, address: string | undefined): Promise<void> {
    const user = await findRecoveryUser(db, email);
    if (!user) return;
    const sent = await mails.passwordReset(user);
    await recordAuditEvent(db, {
      type: 'password-reset-requested',
      userId: user.id,
      clientAddress: address,
      detail: { sent, hasPassword: user.password_hash !== null },
    });
  }

  return {
    // Counted in the store: every API process on the database spends from one budget per client address.
    perAddress: storedClientLimit(db, 'password-reset:address', WindowMinutes * 60, AddressPermitLimit, (res) =>
      sendPage(res, 429, forgotPasswordPage(RECOVERY_PATHS.forgot, '', tooMany)),
    ),
    show: (req: Request, res: Response) => {
      const email =
        typeof req.query.email === 'string' && req.query.email.length <= FIELD_BOUNDS.email ? req.query.email : '';
      sendPage(res, 200, forgotPasswordPage(RECOVERY_PATHS.forgot, email, undefined, returnUidOf(req.query.return)));
    },
    post: (req: Request, res: Response) => {
      const parsed = emailForm.safeParse(req.body);
      const returnUid = returnUidOf((req.body as Record<string, unknown> | undefined)?.return);
      if (!parsed.success)
        return sendPage(
          res,
          400,
          forgotPasswordPage(RECOVERY_PATHS.forgot, '', 'Enter a valid e-mail address.', returnUid),
        );
      const { email } = parsed.data;
      // The answer goes before anything looks at the address, so its duration is the same for a known and an unknown
      // one from the first request on, with no padding to learn. OWASP's Forgot Password Cheat Sheet: "Ensure that
      // responses return in a consistent amount of time to prevent an attacker enumerating which accounts exist. This
      // could be achieved by using asynchronous calls". The work waits a moment more, so that on a busy host it does
      // not compete for the CPU with the answer on its way out.
      sendPage(res, 200, resetLinkSentPage(email, TokenMinutes, returnUid ? backToSignIn(returnUid) : undefined));
      const address = req.ip;
      setTimeout(() => {
        requestReset(email, address).catch((error: Error) =>
          logger.error(`recovery: a reset request was answered but not carried out: ${error.message}`),
        );
      }, AFTER_THE_ANSWER_MS);
    },
  };
}

/** The reset link's form, while its token is good. */
const showResetForm =
  ({ db, config }: RecoveryRouterDependencies) =>
  async (req: Request, res: Response) => {
    const token = typeof req.query.token === 'string' ? req.query.token : '';
    if (token.length > 128 || !(await peekAccountToken(db, 'password-reset', token)))
      return sendPage(res, 400, linkExpiredPage(RECOVERY_PATHS.forgot));
    sendPage(res, 200, resetPasswordPage(RECOVERY_PATHS.reset, token, policyInWords(config.Auth.PasswordPolicy)));
  };

/** The new password: set once per link, and every sign-in of the user ended. */
const postNewPassword =
  ({ db, config, signOut }: RecoveryRouterDependencies) =>
  async (req: Request, res: Response) => {
    const parsed = resetForm.safeParse(req.body);
    if (!parsed.success) return sendPage(res, 400, linkExpiredPage(RECOVERY_PATHS.forgot));
    const { token, password, confirm } = parsed.data;
    const rules = policyInWords(config.Auth.PasswordPolicy);
    const again = (error: string) => sendPage(res, 400, resetPasswordPage(RECOVERY_PATHS.reset, token, rules, error));
    if (!(await peekAccountToken(db, 'password-reset', token)))
      return sendPage(res, 400, linkExpiredPage(RECOVERY_PATHS.forgot));
    if (password !== confirm) return again('The two passwords are not the same.');
    const violations = passwordPolicyViolations(password, config.Auth.PasswordPolicy);
    if (violations.length > 0) return again(`The password ${violations.join('; ')}.`);
    const hash = await hashPassword(password);
    // Taken only now, once: of two forms posted with one link, one sets the password.
    const userId = await takeAccountToken(db, 'password-reset', token);
    if (!userId) return sendPage(res, 400, linkExpiredPage(RECOVERY_PATHS.forgot));
    await setPasswordHash(db, userId, hash);
    const sessions = await signOut.everywhere(userId);
    await recordAuditEvent(db, { type: 'password-reset-completed', userId, clientAddress: req.ip });
    await recordAuditEvent(db, {
      type: 'sessions-revoked',
      userId,
      clientAddress: req.ip,
      detail: { sessions, reason: 'password-reset' },
    });
    sendPage(res, 200, resetDonePage());
  };

/** A confirmation link: the address is confirmed, once. */
const confirmEmail =
  ({ db }: RecoveryRouterDependencies) =>
  async (req: Request, res: Response) => {
    const token = typeof req.query.token === 'string' ? req.query.token : '';
    const userId = token.length <= 128 ? await takeAccountToken(db, 'email-confirmation', token) : undefined;
    if (!userId) return sendPage(res, 400, confirmationExpiredPage());
    await markEmailConfirmed(db, userId);
    await recordAuditEvent(db, { type: 'email-confirmed', userId, clientAddress: req.ip });
    sendPage(res, 200, emailConfirmedPage());
  };
