import type { Request, Response } from 'express';
import { logger } from '../../../platform/observability/logger';
import { FederationCheckError } from '../../federation/federation-errors';
import { emailForm } from '../forms';
import {
  interactionOf,
  type InteractionContext,
  type InteractionDetails,
  type PendingSecondFactor,
} from './interaction-context';

/** The first page: the e-mail, or the second factor when a password check left one pending. */
export const showSignIn =
  ({ html, codeStep, emailStep }: InteractionContext) =>
  async (res: Response, details: InteractionDetails) => {
    if ((details.result as Partial<PendingSecondFactor> | undefined)?.secondFactor)
      return html(res, 200, codeStep(details.uid));
    return emailStep(res, 200, details);
  };

/** The e-mail step: an address of an SSO domain goes to its identity provider, any other to the password page. */
export const postEmail =
  ({ provider, federation, html, passwordStep, emailStep }: InteractionContext) =>
  async (req: Request, res: Response) => {
    const details = await interactionOf(provider, req, res);
    const parsed = emailForm.safeParse(req.body);
    if (!parsed.success) return emailStep(res, 400, details, 'Enter a valid e-mail address.');
    let upstream: string | undefined;
    try {
      upstream = await federation.startFor(parsed.data.email, details.uid);
    } catch (error) {
      if (!(error instanceof FederationCheckError)) throw error;
      logger.warn(`federation: ${error.message}`);
      const unreachable = "Your organization's sign-in cannot be reached right now; try again later.";
      return emailStep(res, 502, details, unreachable, parsed.data.email);
    }
    if (upstream) return res.redirect(303, upstream);
    html(res, 200, passwordStep(details.uid, parsed.data.email));
  };

/** "Use another e-mail": the first step again, forgetting any pending second factor or confirmation. */
export const postRestart =
  ({ provider, record, emailStep }: InteractionContext) =>
  async (req: Request, res: Response) => {
    const details = await interactionOf(provider, req, res);
    await record(details, {});
    return emailStep(res, 200, details);
  };
