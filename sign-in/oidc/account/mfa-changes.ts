import type { RequestHandler, Request, Response } from 'express';
import { removeMfa } from '../../store/accounts';
import { recordAuditEvent } from '../../store/audit-events';
import { findTotpCredential } from '../../store/mfa';
import type { SignedInUser } from '../account-session';
import { mfaOffPage, recoveryCodesPage } from '../account-pages';
import { MFA_PAGE, type AccountContext } from './account-context';
import { newRecoveryCodes } from './recovery-codes';

/** A change to two-step verification while it is on: signed in, and the password again (confirmedByPassword). */
const changingMfa =
  (
    ctx: AccountContext,
    change: (req: Request, res: Response, user: SignedInUser) => Promise<unknown>,
  ): RequestHandler =>
  async (req, res) => {
    const user = await ctx.poster(req, res);
    if (!user) return;
    if (!(await findTotpCredential(ctx.db, user.id))) return res.redirect(303, MFA_PAGE);
    const refused = await ctx.confirmedByPassword(req, user);
    if (refused) return ctx.html(res, 400, refused);
    await change(req, res, user);
  };

export const postNewRecoveryCodes = (ctx: AccountContext) =>
  changingMfa(ctx, async (req, res, user) => {
    const codes = await newRecoveryCodes(ctx, user.id);
    await recordAuditEvent(ctx.db, { type: 'recovery-codes-regenerated', userId: user.id, clientAddress: req.ip });
    // New codes leave the security stamp as it is in ASP.NET Identity (GenerateNewTwoFactorRecoveryCodesAsync):
    // the other sign-ins stay; the owner is told.
    await ctx.afterChange(req, user, 'recovery-codes-regenerated', false);
    ctx.html(res, 200, recoveryCodesPage(codes, false));
  });

export const postMfaOff = (ctx: AccountContext) =>
  changingMfa(ctx, async (req, res, user) => {
    await removeMfa(ctx.db, user.id);
    await recordAuditEvent(ctx.db, { type: 'mfa-removed', userId: user.id, clientAddress: req.ip });
    await ctx.afterChange(req, user, 'mfa-removed', true);
    ctx.html(res, 200, mfaOffPage());
  });
