import type { Request, Response } from 'express';
import { z } from 'zod';
import { FIELD_BOUNDS } from '../../../platform/security/field-bounds';
import { hashPassword } from '../../../platform/security/password-hashing';
import { passwordPolicyViolations } from '../../../platform/security/password-policy';
import { listSessionsOf } from '../../../platform/store/oidc-payloads';
import { policyInWords } from '../../recovery/recovery-router';
import { findNames, setPasswordHash } from '../../store/accounts';
import { findClientNames, findSessionDevices } from '../../store/session-devices';
import type { Db } from '../../../platform/store/database';
import type { SessionView } from '../account-profile-pages';
import { deviceDescription } from './device-description';
import { recordAuditEvent } from '../../store/audit-events';
import { findTotpCredential } from '../../store/mfa';
import type { SignedInUser } from '../account-session';
import { accountPage, signedOutEverywherePage } from '../account-pages';
import { formField } from '../forms';
import { notSignedInPage } from '../sign-in-pages';
import type { AccountContext } from './account-context';

const changeForm = z.object({
  current: formField(FIELD_BOUNDS.password),
  password: formField(FIELD_BOUNDS.password),
  confirm: formField(FIELD_BOUNDS.password),
});

/** The user's sessions, newest first: when, from where (address and device), for which applications by name. */
async function sessionsOf(db: Db, user: SignedInUser): Promise<SessionView[]> {
  const sessions = await listSessionsOf(db, user.id);
  const devices = await findSessionDevices(
    db,
    user.id,
    sessions.map((s) => s.id),
  );
  const names = await findClientNames(db, [...new Set(sessions.flatMap((s) => s.clientIds))]);
  return sessions.map((s) => ({
    id: s.id,
    signedInAt: s.signedInAt,
    device: deviceDescription(devices.get(s.id)?.userAgent),
    clientAddress: devices.get(s.id)?.clientAddress ?? null,
    apps: s.clientIds.map((id) => names.get(id) ?? id),
    current: s.id === user.sessionId,
  }));
}

/** The account page: name and e-mail, the password, two-step sign-in, where the user is signed in. */
export async function overview(
  { db, config, html }: AccountContext,
  res: Response,
  user: SignedInUser,
  notice?: string,
  error?: string,
  status = 200,
) {
  const account = {
    email: user.email,
    ...(await findNames(db, user.id)),
    hasPassword: user.hasPassword,
    mfaOn: (await findTotpCredential(db, user.id)) !== undefined,
    sessions: await sessionsOf(db, user),
    passwordRules: policyInWords(config.Auth.PasswordPolicy),
    formToken: user.token,
  };
  html(res, status, accountPage(account, notice, error));
}

export const showAccount = (ctx: AccountContext) => async (req: Request, res: Response) => {
  const user = await ctx.signedInUser(req, res);
  if (!user) return ctx.html(res, 401, notSignedInPage());
  await overview(ctx, res, user);
};

/** A new password, with the current one (checked as at sign-in: it counts toward the lockout). */
export const postPasswordChange = (ctx: AccountContext) => async (req: Request, res: Response) => {
  const { db, config } = ctx;
  const user = await ctx.poster(req, res);
  if (!user) return;
  const refuse = (error: string) => overview(ctx, res, user, undefined, error, 400);
  const parsed = changeForm.safeParse(req.body);
  if (!parsed.success || !user.hasPassword) return refuse('Fill in all three fields.');
  const { current, password, confirm } = parsed.data;
  if (!(await ctx.isTheirPassword(user, current))) return refuse('Your current password is not right.');
  if (password !== confirm) return refuse('The two new passwords are not the same.');
  const violations = passwordPolicyViolations(password, config.Auth.PasswordPolicy);
  if (violations.length > 0) return refuse(`The new password ${violations.join('; ')}.`);
  await setPasswordHash(db, user.id, await hashPassword(password));
  await recordAuditEvent(db, { type: 'password-changed', userId: user.id, clientAddress: req.ip });
  await ctx.afterChange(req, user, 'password-changed', true);
  await overview(ctx, res, user, 'Your password is changed. Every other device and application was signed out.');
};

/** "Sign out everywhere": every session, refresh token and grant, this browser's session too. */
export const postSignOutEverywhere = (ctx: AccountContext) => async (req: Request, res: Response) => {
  const user = await ctx.poster(req, res);
  if (!user) return;
  const sessions = await ctx.signOut.everywhere(user.id);
  await recordAuditEvent(ctx.db, {
    type: 'sessions-revoked',
    userId: user.id,
    clientAddress: req.ip,
    detail: { sessions },
  });
  ctx.html(res, 200, signedOutEverywherePage(sessions));
};
