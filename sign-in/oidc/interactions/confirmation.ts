import type { Request, Response } from 'express';
import { unconfirmedEmailPage } from '../../recovery/recovery-pages';
import { findRecoveryUserById } from '../../store/accounts';
import { interactionOf, type InteractionContext, type PendingConfirmation } from './interaction-context';

/** The confirmation mail again, for the account whose unconfirmed address stopped this sign-in. */
export const postConfirmation =
  ({ provider, db, mails, html, action }: InteractionContext) =>
  async (req: Request, res: Response) => {
    const details = await interactionOf(provider, req, res);
    const pending = (details.result as Partial<PendingConfirmation> | undefined)?.unconfirmed;
    if (!pending) return res.redirect(303, `/interaction/${encodeURIComponent(details.uid)}`);
    const user = await findRecoveryUserById(db, pending.accountId);
    if (user && !user.email_confirmed) await mails.confirmation(user);
    html(res, 200, unconfirmedEmailPage(action(details.uid, 'confirmation'), pending.email, true));
  };
