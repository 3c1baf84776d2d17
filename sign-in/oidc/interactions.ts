import type { SourceReadThrough } from '../read-through';
import express, { Router, type Request, type Response } from 'express';
import type Provider from 'oidc-provider';
import { z } from 'zod';
import { outcomeProblem } from '../../provisioning/outcome-answers';
import { AttemptInProgressError } from '../../platform/temporal/run-errors';
import type { WorkflowRunner } from '../../provisioning/workflow-runner';
import type { AppConfig } from '../../platform/config/schema';
import type { KeyRing } from '../../platform/security/data-protection';
import { findClient, type ClientRow } from '../../platform/store/clients';
import type { Db } from '../../platform/store/database';
import { isSsoDomainEmail } from '../store/federation';
import { listProvisionedApps } from '../../platform/store/provisions';
import { domainOf, findUserEmail } from '../../platform/store/users';
import { provisioningWorkflowId } from '../../provisioning/workflows/ids';
import { provisionExistingUser } from '../../provisioning/workflows/provisioning';
import { settingsOf } from './clients';
import {
  checkPassword,
  checkSecondFactor,
  overSignInBudget,
  type PasswordCheck,
  type SecondFactorCheck,
} from './credentials';
import { codePage, consentPage, emailPage, passwordPage, renderErrorPage } from './pages';
import { recordAuditEvent, type AuditEvent } from '../store/audit-events';
import { countRecoveryCodes, findRecoveryUserById } from '../store/accounts';
import { findScopeTexts } from '../store/sign-in-users';
import { RECOVERY_PATHS, type RecoveryMails } from '../recovery/router';
import { unconfirmedEmailPage } from '../recovery/pages';
import type { Federation } from '../federation/federation';
import { FederationCheckError } from '../federation/errors';
import { logger } from '../../platform/observability/logger';
import { FIELD_BOUNDS } from '../../platform/security/field-bounds';
import { emailAddressField, emailForm, formField } from './forms';
import { signInErrorPage } from './error-page';

export { signInErrorPage };

export interface InteractionDependencies {
  provider: Provider;
  db: Db;
  config: AppConfig;
  ring: KeyRing;
  run: WorkflowRunner;
  /** Home-realm discovery and the way back from an upstream provider. */
  federation: Federation;
  /** The confirmation mail, sent again from the page that says an address is not confirmed yet. */
  mails: RecoveryMails;
  /** The cutover's read-through window, while it is configured. */
  readThrough?: SourceReadThrough;
}

const passwordForm = z.object({
  email: emailAddressField,
  password: formField(FIELD_BOUNDS.password),
});
const codeForm = z.object({ code: formField(64) });

/** What a password check leaves in the interaction while the second factor is asked for. */
interface PendingSecondFactor {
  secondFactor: { accountId: string };
}

/** What a password check leaves while the address waits for its confirmation (Auth:RequireConfirmedEmail). */
interface PendingConfirmation {
  unconfirmed: { accountId: string; email: string };
}

type InteractionDetails = Awaited<ReturnType<Provider['interactionDetails']>>;

/**
 * RFC 6749 §4.1.2.1: error_description holds printable ASCII without `"` and `\`. An app's refusal reason is the
 * app's text: it reaches the client as plain text (markup removed), on one line, capped.
 */
export function errorDescriptionOf(reason: string): string {
  const plain = reason
    .replace(/<[^>]*>/g, ' ')
    .replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
  return plain.length > 200 ? `${plain.slice(0, 197)}...` : plain || 'access was refused';
}

/**
 * The sign-in pages of oidc-provider's interactions: the e-mail first (so single sign-on can later send some domains
 * elsewhere), then the password, then the second factor when the user has two-factor sign-in on; then consent, where a
 * client's `provisioningApps` are provisioned before the code is issued. The interaction's own cookie, bound to its
 * uid, is what makes a form post from another site fail.
 */
export function interactionRouter(deps: InteractionDependencies): Router {
  const { provider, db, config } = deps;
  const router = Router();
  const form = express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 20 });
  const action = (uid: string, step: string) => `/interaction/${encodeURIComponent(uid)}/${step}`;
  const html = (res: Response, status: number, body: string) => res.status(status).type('html').send(body);

  /** An event of the audit trail, with the client and the client address of the sign-in. */
  const audit = (req: Request, details: InteractionDetails, event: Omit<AuditEvent, 'clientId' | 'clientAddress'>) =>
    recordAuditEvent(db, { ...event, clientId: String(details.params.client_id), clientAddress: req.ip });
  const restart = (uid: string) => action(uid, 'restart');
  const forgot = (email: string) => `${RECOVERY_PATHS.forgot}?email=${encodeURIComponent(email)}`;
  const passwordStep = (uid: string, email: string, error?: string) =>
    passwordPage(action(uid, 'password'), email, restart(uid), forgot(email), error);
  const codeStep = (uid: string, error?: string) => codePage(action(uid, 'code'), restart(uid), error);

  async function clientNameOf(clientId: string): Promise<string> {
    return (await findClient(db, clientId))?.client_name ?? clientId;
  }

  /** The e-mail step again (naming the client as the first one did), with what went wrong. */
  async function emailStep(res: Response, status: number, details: InteractionDetails, error?: string, email?: string) {
    const clientName = await clientNameOf(String(details.params.client_id));
    return html(res, status, emailPage(action(details.uid, 'email'), clientName, error, email));
  }

  /** The per-address budget across every account; a refusal says when to come back. */
  const overBudget = (req: Request) => overSignInBudget(db, config, req.ip);
  /**
   * The one answer for every failed password: an unknown e-mail and a locked account read the same as a wrong
   * password, so the page tells no one whether an account exists; it says how the lockout works instead.
   */
  const wrongCredentials = () => {
    const { MaxFailedAttempts, Minutes } = config.Auth.Lockout;
    return `The e-mail or password is not right. After ${MaxFailedAttempts} failed attempts an account is locked for ${Minutes} minutes.`;
  };
  const ssoRequired = (domain: string) =>
    `Accounts of ${domain} sign in through their organization's sign-in page, not with a password here. Start again from the application and enter your e-mail address.`;
  const tooMany = () =>
    `Too many sign-in attempts from this network; wait ${config.Auth.SignInRateLimit.WindowSeconds} seconds and try again.`;

  router.get('/interaction/:uid', async (req, res) => {
    const details = await provider.interactionDetails(req, res);
    const uid = details.uid;
    if (details.prompt.name === 'login') {
      if ((details.result as Partial<PendingSecondFactor> | undefined)?.secondFactor)
        return html(res, 200, codeStep(uid));
      return emailStep(res, 200, details);
    }
    const client = await findClient(db, String(details.params.client_id));
    if (client && settingsOf(client).RequireConsent) {
      const names = [
        ...((details.prompt.details.missingOIDCScope as string[] | undefined) ?? []),
        ...Object.values((details.prompt.details.missingResourceScopes as Record<string, string[]>) ?? {}).flat(),
      ];
      const texts = new Map((await findScopeTexts(db, names)).map((t) => [t.name, t]));
      const scopes = names.map((name) => ({
        name,
        displayName: texts.get(name)?.display_name ?? null,
        description: texts.get(name)?.description ?? null,
      }));
      return html(
        res,
        200,
        consentPage(action(uid, 'consent'), action(uid, 'abort'), client.client_name ?? client.client_id, scopes),
      );
    }
    await grantConsent(req, res, details, client);
  });

  router.post('/interaction/:uid/email', form, async (req, res) => {
    const details = await provider.interactionDetails(req, res);
    const parsed = emailForm.safeParse(req.body);
    if (!parsed.success) return emailStep(res, 400, details, 'Enter a valid e-mail address.');
    let upstream: string | undefined;
    try {
      upstream = await deps.federation.startFor(parsed.data.email, details.uid);
    } catch (error) {
      if (!(error instanceof FederationCheckError)) throw error;
      logger.warn(`federation: ${error.message}`);
      const unreachable = "Your organization's sign-in cannot be reached right now; try again later.";
      return emailStep(res, 502, details, unreachable, parsed.data.email);
    }
    if (upstream) return res.redirect(303, upstream);
    html(res, 200, passwordStep(details.uid, parsed.data.email));
  });

  /** "Use another e-mail": the first step again, forgetting any pending second factor or confirmation. */
  router.post('/interaction/:uid/restart', form, async (req, res) => {
    const details = await provider.interactionDetails(req, res);
    await provider.interactionResult(req, res, {}, { mergeWithLastSubmission: false });
    return emailStep(res, 200, details);
  });

  /** The confirmation mail again, for the account whose unconfirmed address stopped this sign-in. */
  router.post('/interaction/:uid/confirmation', form, async (req, res) => {
    const details = await provider.interactionDetails(req, res);
    const pending = (details.result as Partial<PendingConfirmation> | undefined)?.unconfirmed;
    if (!pending) return res.redirect(303, `/interaction/${encodeURIComponent(details.uid)}`);
    const user = await findRecoveryUserById(db, pending.accountId);
    if (user && !user.email_confirmed) await deps.mails.confirmation(user);
    html(res, 200, unconfirmedEmailPage(action(details.uid, 'confirmation'), pending.email, true));
  });

  /** Back from an upstream provider: the callback left a ticket naming the user for this interaction. */
  router.get('/interaction/:uid/federated', async (req, res) => {
    const details = await provider.interactionDetails(req, res);
    const ticket = typeof req.query.ticket === 'string' ? req.query.ticket : '';
    const userId = ticket.length <= 64 ? await deps.federation.takeTicket(ticket, details.uid) : undefined;
    if (!userId)
      return html(
        res,
        400,
        renderErrorPage('This sign-in has expired or was used already; start again from the application.'),
      );
    await audit(req, details, { type: 'sign-in-succeeded', userId, detail: { method: 'external' } });
    await provider.interactionFinished(
      req,
      res,
      { login: { accountId: userId, amr: ['external'] } },
      { mergeWithLastSubmission: false },
    );
  });

  router.post('/interaction/:uid/password', form, async (req, res) => {
    const details = await provider.interactionDetails(req, res);
    const parsed = passwordForm.safeParse(req.body);
    if (!parsed.success) return emailStep(res, 400, details, wrongCredentials());
    const { email, password } = parsed.data;
    // The SSO-domain rule holds at this step too, not only on the e-mail page: a password posted here directly for
    // an address of an SSO domain is not checked, and the browser goes to the domain's identity provider.
    if (await isSsoDomainEmail(db, email)) {
      await audit(req, details, {
        type: 'sign-in-failed',
        detail: { reason: 'sso-required', domain: domainOf(email) },
      });
      const upstream = await deps.federation.startFor(email, details.uid).catch(() => undefined);
      if (upstream) return res.redirect(303, upstream);
      return emailStep(res, 400, details, ssoRequired(domainOf(email)), email);
    }
    if (await overBudget(req)) return html(res, 429, passwordStep(details.uid, email, tooMany()));
    const check: PasswordCheck = await checkPassword(db, config, email, password, deps.readThrough);
    if (check.status !== 'valid') {
      await audit(req, details, { type: 'sign-in-failed', userId: check.userId, detail: { reason: check.reason } });
      if (check.lockedNow) await audit(req, details, { type: 'locked-out', userId: check.userId });
      return html(res, 200, passwordStep(details.uid, email, wrongCredentials()));
    }
    // ASP.NET Identity's RequireConfirmedEmail: the password was right, and the address still has to be confirmed.
    if (config.Auth.RequireConfirmedEmail && !check.emailConfirmed) {
      await audit(req, details, {
        type: 'sign-in-failed',
        userId: check.userId,
        detail: { reason: 'email-unconfirmed' },
      });
      const pending: PendingConfirmation = { unconfirmed: { accountId: check.userId, email } };
      await provider.interactionResult(req, res, pending as never, { mergeWithLastSubmission: false });
      return html(res, 200, unconfirmedEmailPage(action(details.uid, 'confirmation'), email));
    }
    if (check.needsSecondFactor) {
      const pending: PendingSecondFactor = { secondFactor: { accountId: check.userId } };
      await provider.interactionResult(req, res, pending as never, { mergeWithLastSubmission: false });
      return html(res, 200, codeStep(details.uid));
    }
    await audit(req, details, { type: 'sign-in-succeeded', userId: check.userId, detail: { method: 'password' } });
    await provider.interactionFinished(
      req,
      res,
      { login: { accountId: check.userId, amr: ['pwd'] } },
      { mergeWithLastSubmission: false },
    );
  });

  router.post('/interaction/:uid/code', form, async (req, res) => {
    const details = await provider.interactionDetails(req, res);
    const pending = (details.result as Partial<PendingSecondFactor> | undefined)?.secondFactor;
    if (!pending) return res.redirect(303, `/interaction/${encodeURIComponent(details.uid)}`);
    const parsed = codeForm.safeParse(req.body);
    const email = await findUserEmail(db, pending.accountId);
    if (!email || (await isSsoDomainEmail(db, email)))
      return emailStep(res, 400, details, email ? ssoRequired(domainOf(email)) : wrongCredentials());
    if (await overBudget(req)) return html(res, 429, codeStep(details.uid, tooMany()));
    const check: SecondFactorCheck = parsed.success
      ? await checkSecondFactor(db, config, deps.ring, pending.accountId, parsed.data.code.replace(/\s/g, ''))
      : { status: 'invalid' };
    if (check.status !== 'valid') {
      const userId = pending.accountId;
      await audit(req, details, {
        type: 'sign-in-failed',
        userId,
        detail: { reason: check.status === 'locked' && !check.lockedNow ? 'locked' : 'wrong-code' },
      });
      if (check.status === 'locked' && check.lockedNow) await audit(req, details, { type: 'locked-out', userId });
      if (check.status === 'locked') return html(res, 200, codeStep(details.uid, check.message));
      return html(res, 200, codeStep(details.uid, 'That code is not right, or it was used already.'));
    }
    await audit(req, details, {
      type: 'sign-in-succeeded',
      userId: pending.accountId,
      detail: { method: check.method },
    });
    if (check.method === 'recovery-code')
      await audit(req, details, {
        type: 'recovery-code-used',
        userId: pending.accountId,
        detail: { left: await countRecoveryCodes(db, pending.accountId) },
      });
    await provider.interactionFinished(
      req,
      res,
      { login: { accountId: pending.accountId, amr: ['pwd', 'mfa'] } },
      { mergeWithLastSubmission: false },
    );
  });

  router.post('/interaction/:uid/consent', form, async (req, res) => {
    const details = await provider.interactionDetails(req, res);
    await grantConsent(req, res, details, await findClient(db, String(details.params.client_id)));
  });

  router.post('/interaction/:uid/abort', form, async (req, res) => {
    await provider.interactionFinished(
      req,
      res,
      { error: 'access_denied', error_description: 'the user did not allow access' },
      { mergeWithLastSubmission: false },
    );
  });

  /**
   * Consent: the grant of what the client asked for, after the client's provisioning apps that do not hold the user
   * yet have confirmed it (spec trigger `GET /connect/authorize`). A refusal or failure goes back to the client as
   * `access_denied` with the reason; the next authorization provisions only the apps still missing.
   */
  async function grantConsent(
    req: Request,
    res: Response,
    details: Awaited<ReturnType<Provider['interactionDetails']>>,
    client: ClientRow | undefined,
  ): Promise<void> {
    const accountId = details.session?.accountId;
    const clientId = String(details.params.client_id);
    if (!accountId) return void res.redirect(303, `/interaction/${encodeURIComponent(details.uid)}`);
    const refusal = await provisionAtAuthorization(accountId, client);
    if (refusal)
      return provider.interactionFinished(
        req,
        res,
        { error: 'access_denied', error_description: errorDescriptionOf(refusal) },
        { mergeWithLastSubmission: false },
      );
    const grant = details.grantId
      ? (await provider.Grant.find(details.grantId))!
      : new provider.Grant({ accountId, clientId });
    const missing = details.prompt.details;
    if (missing.missingOIDCScope) grant.addOIDCScope((missing.missingOIDCScope as string[]).join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims as string[]);
    for (const [indicator, scopes] of Object.entries((missing.missingResourceScopes as Record<string, string[]>) ?? {}))
      grant.addResourceScope(indicator, scopes.join(' '));
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
  }

  /** Undefined when the user holds every app of the client (or now does), else why not. */
  async function provisionAtAuthorization(userId: string, client: ClientRow | undefined): Promise<string | undefined> {
    const wanted = client?.provisioning_apps ?? [];
    if (wanted.length === 0) return undefined;
    const held = new Set(await listProvisionedApps(db, userId));
    const appIds = wanted.filter((app) => !held.has(app));
    if (appIds.length === 0) return undefined;
    try {
      const outcome = await deps.run(provisionExistingUser, {
        workflowId: provisioningWorkflowId(userId),
        args: [{ trigger: 'authorize', userId, appIds }],
        search: { userId, trigger: 'authorize' },
      });
      return outcome.status === 'provisioned' ? undefined : outcomeProblem(outcome).problem.detail;
    } catch (error) {
      if (error instanceof AttemptInProgressError)
        return 'another provisioning attempt for this user is running; try again in a moment';
      throw error;
    }
  }

  router.use(signInErrorPage);
  return router;
}
