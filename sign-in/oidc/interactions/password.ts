import type { Request, Response } from 'express';
import { z } from 'zod';
import { FIELD_BOUNDS } from '../../../platform/security/field-bounds';
import { domainOf } from '../../../platform/store/users';
import { unconfirmedEmailPage } from '../../recovery/recovery-pages';
import { isSsoDomainEmail } from '../../store/sso-provider-configs';
import { checkPassword, type PasswordCheck } from '../credentials';
import { emailAddressField, formField } from '../forms';
import {
  interactionOf,
  type InteractionContext,
  type InteractionDetails,
  type PendingConfirmation,
  type PendingSecondFactor,
  type SignedInAsOf,
} from './interaction-context';

const passwordForm = z.object({
  email: emailAddressField,
  password: formField(FIELD_BOUNDS.password),
});

/**
 * The password step: a wrong password, an unknown address and a locked account answer alike; a right one signs in,
 * or first asks for the second factor or the address's confirmation.
 */
export const postPassword = (ctx: InteractionContext) => async (req: Request, res: Response) => {
  const { provider, db, config, html, audit, emailStep, passwordStep, wrongCredentials } = ctx;
  const details = await interactionOf(provider, req, res);
  const parsed = passwordForm.safeParse(req.body);
  if (!parsed.success) return emailStep(res, 400, details, wrongCredentials());
  const { email, password } = parsed.data;
  // The SSO-domain rule holds at this step too, not only on the e-mail page: a password posted here directly for
  // an address of an SSO domain is not checked, and the browser goes to the domain's identity provider.
  if (await isSsoDomainEmail(db, email)) return ssoDomainPassword(ctx, req, res, details, email);
  if (await ctx.overBudget(req)) return html(res, 429, passwordStep(details.uid, email, ctx.tooMany()));
  const check: PasswordCheck = await checkPassword(db, config, email, password, ctx.readThrough);
  if (check.status !== 'valid') {
    await audit(req, details, { type: 'sign-in-failed', userId: check.userId, detail: { reason: check.reason } });
    if (check.lockedNow) await audit(req, details, { type: 'locked-out', userId: check.userId });
    return html(res, 200, passwordStep(details.uid, email, wrongCredentials()));
  }
  // ASP.NET Identity's RequireConfirmedEmail: the password was right, and the address still has to be confirmed.
  if (config.Auth.RequireConfirmedEmail && !check.emailConfirmed)
    return awaitConfirmation(ctx, req, res, details, { accountId: check.userId, email });
  if (check.needsSecondFactor) {
    const pending: PendingSecondFactor = {
      secondFactor: { accountId: check.userId, signedInAsOf: { stamp: check.stamp } },
    };
    await ctx.record(details, pending as never);
    return html(res, 200, ctx.codeStep(details.uid));
  }
  await audit(req, details, { type: 'sign-in-succeeded', userId: check.userId, detail: { method: 'password' } });
  const asOf: SignedInAsOf = { signedInAsOf: { stamp: check.stamp } };
  await ctx.finish(res, details, { login: { accountId: check.userId, amr: ['pwd'] }, ...asOf });
};

async function ssoDomainPassword(
  { federation, audit, emailStep, ssoRequired }: InteractionContext,
  req: Request,
  res: Response,
  details: InteractionDetails,
  email: string,
) {
  await audit(req, details, {
    type: 'sign-in-failed',
    detail: { reason: 'sso-required', domain: domainOf(email) },
  });
  const upstream = await federation.startFor(email, details.uid).catch(() => undefined);
  if (upstream) return res.redirect(303, upstream);
  return emailStep(res, 400, details, ssoRequired(domainOf(email)), email);
}

async function awaitConfirmation(
  { record, audit, html, action }: InteractionContext,
  req: Request,
  res: Response,
  details: InteractionDetails,
  unconfirmed: PendingConfirmation['unconfirmed'],
) {
  await audit(req, details, {
    type: 'sign-in-failed',
    userId: unconfirmed.accountId,
    detail: { reason: 'email-unconfirmed' },
  });
  const pending: PendingConfirmation = { unconfirmed };
  await record(details, pending as never);
  return html(res, 200, unconfirmedEmailPage(action(details.uid, 'confirmation'), unconfirmed.email));
}
