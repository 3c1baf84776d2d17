import type { Request, Response } from 'express';
import { renderErrorPage } from '../sign-in-pages';
import { interactionOf, type InteractionContext } from './interaction-context';

/** Back from an upstream provider: the callback left a ticket naming the user for this interaction. */
export const federatedReturn =
  ({ provider, federation, html, audit, finish }: InteractionContext) =>
  async (req: Request, res: Response) => {
    const details = await interactionOf(provider, req, res);
    const ticket = typeof req.query.ticket === 'string' ? req.query.ticket : '';
    const userId = ticket.length <= 64 ? await federation.takeTicket(ticket, details.uid) : undefined;
    if (!userId)
      return html(
        res,
        400,
        renderErrorPage('This sign-in has expired or was used already; start again from the application.', {
          title: 'This sign-in has expired',
        }),
      );
    await audit(req, details, { type: 'sign-in-succeeded', userId, detail: { method: 'external' } });
    await finish(res, details, { login: { accountId: userId, amr: ['external'] } });
  };
