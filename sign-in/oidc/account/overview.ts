import type { Request, Response } from 'express';
import { z } from 'zod';
import { FIELD_BOUNDS } from '../../../platform/security/field-bounds';
import { hashPassword } from '../../../platform/security/password-hashing';
import { passwordPolicyViolations } from '../../../platform/security/password-policy';
import { clientsWithRefreshTokensOf, listSessionsOf, withdrawAccessOf } from '../../../platform/store/oidc-payloads';
import { policyInWords } from '../../recovery/recovery-router';
import { findNames, setPasswordHash } from '../../store/accounts';
import { findClientNames, findSessionDevices } from '../../store/session-devices';
import type { Db } from '../../../platform/store/database';
import type { SessionView } from '../account-profile-pages';
import type { ApplicationAccess } from '../account-pages';
import { deviceDescription } from './device-description';
import { recordAuditEvent } from '../../store/audit-events';
import { findTotpCredential } from '../../store/mfa';
import type { SignedInUser } from '../account-session';
import { accountPage, signedOutEverywherePage } from '../account-pages';
import { formField } from '../forms';
import { listRememberedConsents } from '../../store/consents';
import { findScopeTexts } from '../../store/sign-in-users';
import { ensureAccountClient, finishAccountSignIn, startAccountSignIn } from './account-sign-in';
import { renderErrorPage } from '../sign-in-pages';
import { errorReference } from '../error-page';
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
  // Newest first; two sign-ins within one second (the session's sign-in time has whole seconds) keep their order by
  // the moment their device was recorded, to the millisecond.
  const recorded = (id: string) => devices.get(id)?.recordedAt.getTime() ?? 0;
  const newestFirst = [...sessions].sort(
    (a, b) => (b.signedInAt?.getTime() ?? 0) - (a.signedInAt?.getTime() ?? 0) || recorded(b.id) - recorded(a.id),
  );
  return newestFirst.map((s) => ({
    id: s.id,
    signedInAt: s.signedInAt,
    device: deviceDescription(devices.get(s.id)?.userAgent),
    clientAddress: devices.get(s.id)?.clientAddress ?? null,
    apps: s.clientIds.map((id) => names.get(id) ?? id),
    current: s.id === user.sessionId,
  }));
}

/**
 * The applications with access to the user's account, as Duende's grants page lists them: those told to remember
 * the user's consent, and those holding a refresh token (access while the user is away); each scope by its display
 * name as the consent page showed it.
 */
async function applicationsOf(db: Db, userId: string): Promise<ApplicationAccess[]> {
  const consents = await listRememberedConsents(db, userId);
  const offline = await clientsWithRefreshTokensOf(db, userId);
  const byClient = new Map<string, { scopes: Set<string>; remembered: boolean; offline: boolean }>();
  const entry = (clientId: string) => {
    const found = byClient.get(clientId) ?? { scopes: new Set<string>(), remembered: false, offline: false };
    byClient.set(clientId, found);
    return found;
  };
  for (const consent of consents) {
    const held = entry(consent.clientId);
    held.remembered = true;
    consent.scopes.forEach((scope) => held.scopes.add(scope));
  }
  for (const token of offline) {
    const held = entry(token.clientId);
    held.offline = true;
    token.scopes.forEach((scope) => held.scopes.add(scope));
  }
  const names = await findClientNames(db, [...byClient.keys()]);
  const texts = new Map(
    (await findScopeTexts(db, [...new Set([...byClient.values()].flatMap((held) => [...held.scopes]))])).map((t) => [
      t.name,
      t,
    ]),
  );
  return [...byClient].map(([clientId, held]) => ({
    clientId,
    name: names.get(clientId) ?? clientId,
    scopes: [...held.scopes].map((scope) => texts.get(scope)?.display_name || scope),
    remembered: held.remembered,
    offline: held.offline,
  }));
}

/**
 * The account page: name and e-mail, the password, two-step verification, where the user is signed in, the
 * applications allowed.
 */
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
    applications: await applicationsOf(db, user.id),
    passwordRules: policyInWords(config.Auth.PasswordPolicy),
    formToken: user.token,
  };
  html(res, status, accountPage(account, notice, error));
}

export const showAccount = (ctx: AccountContext) => async (req: Request, res: Response) => {
  const user = await ctx.signedInUser(req, res);
  if (!user) {
    await ensureAccountClient(ctx.db, ctx.issuer, ctx.config.SignIn.ProductName);
    return startAccountSignIn(res, ctx.issuer);
  }
  await overview(ctx, res, user);
};

/**
 * Back from the account pages' own sign-in: on to the page it started from. A return this browser did not start,
 * or one without a session (the sign-in was refused or cancelled), ends here with the way to start again, never in a
 * loop of redirects.
 */
export const accountSignedIn = (ctx: AccountContext) => async (req: Request, res: Response) => {
  const returnTo = finishAccountSignIn(req, res);
  const user = returnTo ? await ctx.signedInUser(req, res) : undefined;
  if (returnTo && user) return res.redirect(303, returnTo);
  const error = typeof req.query.error === 'string' ? req.query.error.slice(0, 100) : 'no session after the callback';
  const reference = errorReference(req, `account sign-in did not finish: ${error}`);
  const retry = { href: '/account', label: 'Sign in again' };
  ctx.html(res, 400, renderErrorPage('The sign-in to your account did not finish.', { reference, onward: retry }));
};

/** "Not you?": this browser signs out, and the account pages' sign-in starts again, asking who it is. */
export const postSwitchAccount = (ctx: AccountContext) => async (req: Request, res: Response) => {
  const user = await ctx.poster(req, res);
  if (!user) return;
  await user.session.destroy();
  await ensureAccountClient(ctx.db, ctx.issuer, ctx.config.SignIn.ProductName);
  startAccountSignIn(res, ctx.issuer, { login: true });
};

const withdrawForm = z.object({ client: formField(200) });

/**
 * Removes an application's access (withdrawAccessOf): its remembered consent, refresh tokens and grants end, and it
 * asks for consent at its next sign-in.
 */
export const postWithdrawConsent = (ctx: AccountContext) => async (req: Request, res: Response) => {
  const user = await ctx.poster(req, res);
  if (!user) return;
  const parsed = withdrawForm.safeParse(req.body);
  if (!parsed.success) return overview(ctx, res, user, undefined, 'Choose the application to remove.', 400);
  const ended = await withdrawAccessOf(ctx.db, user.id, parsed.data.client);
  await recordAuditEvent(ctx.db, {
    type: 'consent-withdrawn',
    userId: user.id,
    clientId: parsed.data.client,
    clientAddress: req.ip,
    detail: { ended },
  });
  await overview(ctx, res, user, 'Access removed: the application asks for your consent at its next sign-in.');
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
