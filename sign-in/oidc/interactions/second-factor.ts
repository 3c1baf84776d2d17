import type { Request, Response } from 'express';
import { z } from 'zod';
import { domainOf, findUserEmail } from '../../../platform/store/users';
import { countRecoveryCodes } from '../../store/accounts';
import { isSsoDomainEmail } from '../../store/sso-provider-configs';
import { checkSecondFactor, type SecondFactorCheck } from '../credentials';
import { formField } from '../forms';
import { interactionOf, type InteractionContext, type PendingSecondFactor } from './interaction-context';

const codeForm = z.object({ code: formField(64) });

/** The second factor (a one-time code or a recovery code) for the account whose password was right. */
export const postCode = (ctx: InteractionContext) => async (req: Request, res: Response) => {
  const { provider, db, config, html, audit, codeStep } = ctx;
  const details = await interactionOf(provider, req, res);
  const pending = (details.result as Partial<PendingSecondFactor> | undefined)?.secondFactor;
  if (!pending) return res.redirect(303, `/interaction/${encodeURIComponent(details.uid)}`);
  const parsed = codeForm.safeParse(req.body);
  const email = await findUserEmail(db, pending.accountId);
  if (!email || (await isSsoDomainEmail(db, email)))
    return ctx.emailStep(res, 400, details, email ? ctx.ssoRequired(domainOf(email)) : ctx.wrongCredentials());
  if (await ctx.overBudget(req)) return html(res, 429, codeStep(details.uid, ctx.tooMany()));
  const check: SecondFactorCheck = parsed.success
    ? await checkSecondFactor(db, config, ctx.ring, pending.accountId, parsed.data.code.replace(/\s/g, ''))
    : { status: 'invalid' };
  const userId = pending.accountId;
  if (check.status !== 'valid') {
    await audit(req, details, {
      type: 'sign-in-failed',
      userId,
      detail: { reason: check.status === 'locked' && !check.lockedNow ? 'locked' : 'wrong-code' },
    });
    if (check.status === 'locked' && check.lockedNow) await audit(req, details, { type: 'locked-out', userId });
    if (check.status === 'locked') return html(res, 200, codeStep(details.uid, check.message));
    return html(res, 200, codeStep(details.uid, 'That code is not right, or it was used already.'));
  }
  await audit(req, details, { type: 'sign-in-succeeded', userId, detail: { method: check.method } });
  if (check.method === 'recovery-code')
    await audit(req, details, {
      type: 'recovery-code-used',
      userId,
      detail: { left: await countRecoveryCodes(db, userId) },
    });
  // The stamp the password step read: a sign-out everywhere since then ends this sign-in at the resume too.
  await ctx.finish(res, details, {
    login: { accountId: userId, amr: ['pwd', 'mfa'] },
    ...(pending.signedInAsOf ? { signedInAsOf: pending.signedInAsOf } : {}),
  });
};
