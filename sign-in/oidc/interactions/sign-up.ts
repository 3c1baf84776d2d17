import type { Request, Response } from 'express';
import { z } from 'zod';
import { FIELD_BOUNDS } from '../../../platform/security/field-bounds';
import type { CreationOutcome } from '../../../provisioning/workflows/provisioning';
import { AttemptInProgressError } from '../../../platform/temporal/run-errors';
import { policyInWords } from '../../recovery/recovery-router';
import { FORM_TOKEN_FIELD, formToken, isFormToken } from '../account/form-token';
import { formExpiredPage } from '../account-pages';
import { emailAddressField, formField } from '../forms';
import {
  addressTakenPage,
  confirmByMailPage,
  signUpPage,
  signUpRefusedPage,
  tooManySignUpsPage,
  type SignUpLinks,
  type SignUpValues,
} from '../sign-up-pages';
import { outcomeProblem, refusalInAppsWords } from '../../../provisioning/outcome-answers';
import { errorReference } from '../error-page';
import { renderErrorPage } from '../sign-in-pages';
import { errorDescriptionOf } from './consent';
import { interactionOf, type InteractionContext, type InteractionDetails } from './interaction-context';

const nameField = formField(FIELD_BOUNDS.name).transform((v) => v.trim() || undefined);

const signUpForm = z.object({
  email: emailAddressField,
  firstName: nameField.optional(),
  lastName: nameField.optional(),
  password: formField(FIELD_BOUNDS.password),
  confirm: formField(FIELD_BOUNDS.password),
  [FORM_TOKEN_FIELD]: formField(128),
});

/**
 * The sign-up form's anti-forgery token, as the account forms carry theirs (account/form-token.ts): a keyed hash, here
 * of the interaction's uid, so only a page this service rendered for this sign-in carries it.
 */
const tokenOf = ({ ring }: InteractionContext, uid: string) => formToken(ring.primary.key, `sign-up:${uid}`);

const linksOf = ({ action, forgot }: InteractionContext, uid: string): SignUpLinks => ({
  action: action(uid, 'sign-up'),
  signIn: action(uid, 'email'),
  forgot: (email) => forgot(uid, email),
});

const textOf = (body: unknown, key: keyof SignUpValues) => {
  const value = body && typeof body === 'object' ? (body as Record<string, unknown>)[key] : undefined;
  return typeof value === 'string' ? value.slice(0, FIELD_BOUNDS.name) : '';
};

/** The form again, with what was typed (never the passwords) and what is wrong. */
async function formAgain(
  ctx: InteractionContext,
  req: Request,
  res: Response,
  details: InteractionDetails,
  error?: string,
  status = 400,
) {
  const clientId = String(details.params.client_id);
  // Through the provider's client look-up, as the e-mail page names the client.
  const clientName = (await ctx.provider.Client.find(clientId))?.clientName ?? clientId;
  const body: unknown = req.method === 'POST' ? req.body : { email: req.query.email };
  const values = {
    email: textOf(body, 'email'),
    firstName: textOf(body, 'firstName'),
    lastName: textOf(body, 'lastName'),
  };
  const rules = policyInWords(ctx.config.Auth.PasswordPolicy).replace('Your new password', 'Your password');
  const page = signUpPage(linksOf(ctx, details.uid), clientName, tokenOf(ctx, details.uid), rules, values, error);
  ctx.html(res, error ? status : 200, page);
}

export const showSignUp = (ctx: InteractionContext) => async (req: Request, res: Response) => {
  const details = await interactionOf(ctx.provider, req, res);
  await formAgain(ctx, req, res, details);
};

/** Past Auth:RegistrationRateLimit, shared with `POST /api/auth/register` (sign-in/registration.ts). */
export const signUpLimit = (ctx: InteractionContext) =>
  ctx.registration.limit((res) => {
    // The way on is the sign-in this page belongs to (its e-mail step), not a dead end.
    const uid = String(res.req.params.uid ?? '');
    const signIn = `/interaction/${encodeURIComponent(uid)}`;
    ctx.html(res, 429, tooManySignUpsPage(ctx.registration.budget.WindowSeconds, signIn));
  });

/**
 * A new account through the one registration path the API takes: the same checks, the downstream apps' Try/Confirm/
 * Cancel, the same answers (a taken address reads as a new one under Auth:RequireConfirmedEmail), then this sign-in
 * goes on: signed in at once, or after the address is confirmed.
 */
export const postSignUp = (ctx: InteractionContext) => async (req: Request, res: Response) => {
  const details = await interactionOf(ctx.provider, req, res);
  const body: unknown = req.body;
  const given = body && typeof body === 'object' ? (body as Record<string, unknown>)[FORM_TOKEN_FIELD] : undefined;
  if (!isFormToken(ctx.ring.primary.key, `sign-up:${details.uid}`, given)) return ctx.html(res, 400, formExpiredPage());
  const parsed = signUpForm.safeParse(body);
  if (!parsed.success) {
    const email = parsed.error.issues.some((i) => i.path[0] === 'email');
    return formAgain(ctx, req, res, details, email ? 'Enter a valid e-mail address.' : 'Fill in the password twice.');
  }
  const { email, firstName, lastName, password, confirm } = parsed.data;
  if (password !== confirm) return formAgain(ctx, req, res, details, 'The two passwords are not the same.');
  let result;
  try {
    result = await ctx.registration.register({ email, password, firstName, lastName });
  } catch (error) {
    if (!(error instanceof AttemptInProgressError)) throw error;
    return formAgain(
      ctx,
      req,
      res,
      details,
      'An account for this address is being created right now; wait a moment and sign in.',
      409,
    );
  }
  const links = linksOf(ctx, details.uid);
  switch (result.status) {
    case 'sso-domain':
      return formAgain(ctx, req, res, details, ctx.ssoRequired(result.domain));
    case 'weak-password':
      return formAgain(ctx, req, res, details, `The password ${result.violations.join('; ')}.`);
    case 'source-unavailable':
      res.setHeader('Retry-After', String(result.retryAfterSeconds));
      return formAgain(
        ctx,
        req,
        res,
        details,
        `Accounts cannot be created right now; try again in ${result.retryAfterSeconds} seconds.`,
        503,
      );
    case 'mailed':
      return ctx.html(res, 200, confirmByMailPage(links, email, ctx.config.Auth.EmailConfirmationTokenMinutes));
    case 'outcome':
      return afterCreation(ctx, req, res, details, links, email, result.outcome);
  }
};

/**
 * Signed in as the new account, or what stopped it: an app's own refusal in its words; any other failure (a call that
 * failed or timed out, a Confirm that did not go through, apps not set up) in plain words with a reference to the log
 * line that holds the detail, as at authorization (consent.ts).
 */
async function afterCreation(
  ctx: InteractionContext,
  req: Request,
  res: Response,
  details: InteractionDetails,
  links: SignUpLinks,
  email: string,
  outcome: CreationOutcome,
) {
  if (outcome.status === 'provisioned') {
    const userId = outcome.user.userId;
    await ctx.audit(req, details, { type: 'sign-in-succeeded', userId, detail: { method: 'sign-up' } });
    return ctx.finish(res, details, { login: { accountId: userId, amr: ['pwd'] } });
  }
  if (outcome.status === 'duplicate') return ctx.html(res, 409, addressTakenPage(links, email));
  const inAppsWords = refusalInAppsWords(outcome);
  if (outcome.status === 'rejected' && inAppsWords !== undefined) {
    const message = `${outcome.appId} did not accept it: ${errorDescriptionOf(inAppsWords)}`;
    return ctx.html(res, 422, signUpRefusedPage(links, 'Your account was not created', message, email));
  }
  const { problem } = outcomeProblem(outcome);
  const reference = errorReference(req, `sign-up: ${problem.detail}`);
  const onward = { href: `/interaction/${encodeURIComponent(details.uid)}`, label: 'Back to sign-in' };
  const message =
    outcome.status === 'partially-confirmed'
      ? 'Your account was created, but an application it is for could not take it yet. Sign in with your e-mail and password; it is tried again then.'
      : 'An application this account is for could not take it right now, so nothing was created. Try again later, or ask the people who run the application.';
  const title =
    outcome.status === 'partially-confirmed' ? 'Your account is not ready everywhere' : 'Your account was not created';
  return ctx.html(res, problem.status, renderErrorPage(message, { title, reference, onward }));
}
