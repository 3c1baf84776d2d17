import { randomUUID } from 'node:crypto';
import type { Request, Response } from 'express';
import { toDataURL } from 'qrcode';
import { z } from 'zod';
import { base32Decode } from '../../../platform/security/base32';
import { protectSecret, protectText, unprotectText } from '../../../platform/security/data-protection';
import { authenticatorUri, matchTotp, newAuthenticatorKey } from '../../totp';
import { recordAuditEvent } from '../../store/audit-events';
import { enrolTotp, findTotpCredential } from '../../store/mfa';
import type { SignedInUser } from '../account-session';
import { recoveryCodesPage } from '../account-pages';
import { mfaEnrolPage, reauthPage, signInAgainPage } from '../sign-in-pages';
import { notSignedInPage } from '../account-pages';
import { ensureAccountClient, startAccountSignIn } from './account-sign-in';
import { MFA_PAGE, passwordForm, type AccountContext } from './account-context';
import { newRecoveryCodes } from './recovery-codes';

/** How long an enrolment page stays good for. */
const PENDING_MINUTES = 15;

/**
 * What the enrolment form carries between its two steps: the new key, for this user, until a deadline, sealed under
 * the data-protection ring, so nothing is stored before the user has proven the key works and a form made for one
 * user cannot enrol another.
 */
const pendingSchema = z.object({ userId: z.string(), key: z.string(), until: z.number() });
type Pending = z.infer<typeof pendingSchema>;

const codeForm = z.object({ pending: z.string().max(2048), code: z.string().max(16) });

const fresh = (userId: string): Pending => ({
  userId,
  key: newAuthenticatorKey(),
  until: Date.now() + PENDING_MINUTES * 60_000,
});

/** A sign-in that is not recent: the password again (or, without one, a new sign-in) before anything changes. */
function reauthentication({ html, recentMinutes }: AccountContext, res: Response, user: SignedInUser, error?: string) {
  if (!user.hasPassword) return html(res, 403, signInAgainPage(recentMinutes));
  html(res, error ? 400 : 200, reauthPage(MFA_PAGE, user.email, user.token, error));
}

async function enrolment(ctx: AccountContext, res: Response, user: SignedInUser, pending: Pending, error?: string) {
  const qr = await toDataURL(authenticatorUri(new URL(ctx.issuer).host, user.email, pending.key), { margin: 1 });
  const sealed = protectText(JSON.stringify(pending), ctx.ring);
  ctx.html(res, error ? 400 : 200, mfaEnrolPage(MFA_PAGE, qr, pending.key, sealed, user.token, error));
}

function openPending({ ring }: AccountContext, sealed: string, userId: string): Pending | undefined {
  try {
    const pending = pendingSchema.parse(JSON.parse(unprotectText(sealed, ring)));
    return pending.userId === userId && pending.until > Date.now() ? pending : undefined;
  } catch {
    return undefined;
  }
}

/** The user who may enrol now; undefined when the page has answered (not signed in, no token, enrolled already). */
async function enrolling(ctx: AccountContext, req: Request, res: Response, posted: boolean) {
  const user = posted ? await ctx.poster(req, res) : await ctx.signedInUser(req, res);
  if (!user && !posted && !res.headersSent) {
    await ensureAccountClient(ctx.db, ctx.issuer, ctx.config.SignIn.ProductName);
    return void startAccountSignIn(res, ctx.issuer, { returnTo: MFA_PAGE });
  }
  if (!user) return void (res.headersSent || ctx.html(res, 401, notSignedInPage()));
  if (await findTotpCredential(ctx.db, user.id)) return void ctx.html(res, 200, await ctx.settings(user));
  return user;
}

/** The first enrolment page: a new key, after a recent sign-in. */
export const showEnrolment = (ctx: AccountContext) => async (req: Request, res: Response) => {
  const user = await enrolling(ctx, req, res, false);
  if (!user) return;
  if (!user.recent) return reauthentication(ctx, res, user);
  await enrolment(ctx, res, user, fresh(user.id));
};

/** The enrolment's posts: the password again (then a new key), or a code from the pending key. */
export const postEnrolment = (ctx: AccountContext) => async (req: Request, res: Response) => {
  const user = await enrolling(ctx, req, res, true);
  if (!user) return;
  // The password form: checked as at sign-in (counted toward the lockout, the same time whatever the outcome).
  if (req.body && typeof req.body === 'object' && 'password' in req.body) {
    if (!(await ctx.isTheirPassword(user, passwordForm.safeParse(req.body).data?.password)))
      return reauthentication(ctx, res, user, 'That password is not right.');
    return enrolment(ctx, res, user, fresh(user.id));
  }
  // A code form carries a pending enrolment sealed for this user, made only after a recent sign-in or the password.
  // Without one that opens, a new key is shown only where the first page would show one: after a recent sign-in.
  const parsed = codeForm.safeParse(req.body);
  const pending = parsed.success ? openPending(ctx, parsed.data.pending, user.id) : undefined;
  if (!parsed.success || !pending) {
    if (!user.recent)
      return reauthentication(ctx, res, user, 'This page has expired; enter your password to start again.');
    return enrolment(ctx, res, user, fresh(user.id), 'This page has expired; scan the new code below.');
  }
  const secret = base32Decode(pending.key);
  const step = await matchTotp(secret, parsed.data.code.replace(/\s/g, ''), null);
  if (step === undefined)
    return enrolment(ctx, res, user, pending, 'That code is not right; check the time on your phone and try again.');
  await enrolTotp(ctx.db, randomUUID(), user.id, protectSecret(secret, ctx.ring), step);
  await recordAuditEvent(ctx.db, { type: 'mfa-enrolled', userId: user.id, clientAddress: req.ip });
  const codes = await newRecoveryCodes(ctx, user.id);
  await ctx.afterChange(req, user, 'mfa-enrolled', true);
  ctx.html(res, 200, recoveryCodesPage(codes, true));
};
