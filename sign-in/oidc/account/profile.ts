import type { Request, Response } from 'express';
import { z } from 'zod';
import { productName } from '../../../platform/http/html';
import { logger } from '../../../platform/observability/logger';
import { FIELD_BOUNDS } from '../../../platform/security/field-bounds';
import { countHit } from '../../../platform/store/rate-limits';
import { domainOf, findUserIdByEmail, normalize } from '../../../platform/store/users';
import { addressInUseMail, accountChangedMail, emailChangeMail } from '../../recovery/mails';
import { createAccountToken, takeEmailChange } from '../../store/account-tokens';
import { changeEmail, findRecoveryUserById, setNames } from '../../store/accounts';
import { recordAuditEvent } from '../../store/audit-events';
import { isSsoDomainEmail } from '../../store/sso-provider-configs';
import {
  emailChangedPage,
  emailChangeExpiredPage,
  emailChangeSentPage,
  emailChangeTakenPage,
} from '../account-profile-pages';
import type { SignedInUser } from '../account-session';
import { emailAddressField, formField } from '../forms';
import { signInAgainPage } from '../sign-in-pages';
import type { AccountContext } from './account-context';
import { overview } from './overview';

export const CONFIRM_EMAIL_CHANGE_PATH = '/account/confirm-email-change';

/** How long the work of an address change waits after its answer went (as "forgot your password?" does). */
const AFTER_THE_ANSWER_MS = 25;

const nameField = formField(FIELD_BOUNDS.name).transform((v) => v.trim() || null);
const namesForm = z.object({ firstName: nameField.optional(), lastName: nameField.optional() });
const emailForm = z.object({ email: emailAddressField, password: formField(FIELD_BOUNDS.password).optional() });

/** The user's name: changed at once (the user's own word, as the admin API and SCIM take it). */
export const postNames = (ctx: AccountContext) => async (req: Request, res: Response) => {
  const user = await ctx.poster(req, res);
  if (!user) return;
  const parsed = namesForm.safeParse(req.body);
  if (!parsed.success) return overview(ctx, res, user, undefined, 'A name is at most 256 characters.', 400);
  await setNames(ctx.db, user.id, parsed.data.firstName ?? null, parsed.data.lastName ?? null);
  await recordAuditEvent(ctx.db, { type: 'profile-changed', userId: user.id, clientAddress: req.ip });
  await overview(ctx, res, user, 'Your name is saved.');
};

/**
 * Another address, asked for with the password (or, without one, a recent sign-in): the answer is the same whether
 * the address is free or another account's, and goes before anything looks at it; then a free address gets a link
 * that makes it the user's, a taken one's owner a notice (ASP.NET Identity's UI mails the new address a
 * GenerateChangeEmailToken link; it changes nothing until the link is opened).
 */
export const postEmailChange = (ctx: AccountContext) => async (req: Request, res: Response) => {
  const user = await ctx.poster(req, res);
  if (!user) return;
  const parsed = emailForm.safeParse(req.body);
  const refuse = (error: string) => overview(ctx, res, user, undefined, error, 400);
  if (!parsed.success) return refuse('Enter a valid new e-mail address.');
  const { email, password } = parsed.data;
  if (user.hasPassword && !(await ctx.isTheirPassword(user, password)))
    return refuse('Your password is not right; the address was not changed.');
  if (!user.hasPassword && !user.recent) return ctx.html(res, 403, signInAgainPage(ctx.recentMinutes));
  if (normalize(email) === normalize(user.email)) return refuse('That is your address already.');
  if (await isSsoDomainEmail(ctx.db, email))
    return refuse(`Addresses of ${domainOf(email)} sign in through their organization's identity provider.`);
  const minutes = ctx.config.Auth.EmailConfirmationTokenMinutes;
  ctx.html(res, 200, emailChangeSentPage(email, minutes));
  const address = req.ip;
  setTimeout(() => {
    requestEmailChange(ctx, user, email, address).catch((error: Error) =>
      logger.error(`account: an address change was answered but not carried out: ${error.message}`),
    );
  }, AFTER_THE_ANSWER_MS);
};

/** What an address change does after the answer: the link to a free address, or the notice to a taken one's owner. */
async function requestEmailChange(ctx: AccountContext, user: SignedInUser, email: string, address?: string) {
  const { db, config, mailer, issuer } = ctx;
  const { PermitLimit, WindowMinutes } = config.Auth.PasswordReset;
  const owner = await findUserIdByEmail(db, email);
  let sent = false;
  if (owner) {
    // The owner's notices share the per-account budget registration's notices spend, so neither floods a mailbox.
    sent = (await countHit(db, 'registration-notice:account', owner, WindowMinutes * 60)) <= PermitLimit;
    if (sent) void mailer.send(addressInUseMail(productName(), email));
  } else {
    const minutes = config.Auth.EmailConfirmationTokenMinutes;
    const budget = { limit: PermitLimit, windowMinutes: WindowMinutes };
    const token = await createAccountToken(db, 'email-change', user.id, minutes, budget, email);
    sent = token !== undefined;
    const url = `${issuer}${CONFIRM_EMAIL_CHANGE_PATH}?token=${token}`;
    if (token) void mailer.send(emailChangeMail(productName(), email, url, minutes));
  }
  await recordAuditEvent(db, {
    type: 'email-change-requested',
    userId: user.id,
    clientAddress: address,
    detail: { sent },
  });
}

/**
 * The link mailed to a new address: it becomes the user's address, confirmed, and the old address is told (ASP.NET
 * Identity's ConfirmEmailChange). Opened in any browser: the token is the proof. Sessions stay, as Keycloak's address
 * update leaves them; links mailed to the old address die with it (their stamp holds the address).
 */
export const confirmEmailChange = (ctx: AccountContext) => async (req: Request, res: Response) => {
  const token = typeof req.query.token === 'string' ? req.query.token : '';
  const change = token.length <= 128 ? await takeEmailChange(ctx.db, token) : undefined;
  if (!change) return ctx.html(res, 400, emailChangeExpiredPage());
  const changed = await changeEmail(ctx.db, change.userId, change.newEmail);
  if (changed.status !== 'changed')
    return changed.status === 'taken'
      ? ctx.html(res, 409, emailChangeTakenPage())
      : ctx.html(res, 400, emailChangeExpiredPage());
  await recordAuditEvent(ctx.db, { type: 'email-changed', userId: change.userId, clientAddress: req.ip });
  const user = await findRecoveryUserById(ctx.db, change.userId);
  void ctx.mailer.send(accountChangedMail(productName(), changed.oldEmail, 'email-changed', false));
  ctx.html(res, 200, emailChangedPage(user?.email ?? change.newEmail));
};
