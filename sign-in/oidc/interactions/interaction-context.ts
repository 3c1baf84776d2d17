import type { Request, Response } from 'express';
import type Provider from 'oidc-provider';
import type { AppConfig } from '../../../platform/config/config-schema';
import type { KeyRing } from '../../../platform/security/data-protection';
import type { ClientReads } from '../../../platform/store/client-reads';
import type { ClientRow } from '../../../platform/store/clients';
import type { Db } from '../../../platform/store/database';
import type { WorkflowRunner } from '../../../provisioning/workflow-runner';
import type { Federation } from '../../federation/federation';
import type { SourceReadThrough } from '../../source-read-through';
import type { Registration } from '../../registration';
import { RECOVERY_PATHS, type RecoveryMails } from '../../recovery/recovery-router';
import { recordAuditEvent, type AuditEvent } from '../../store/audit-events';
import { overSignInBudget } from '../credentials';
import { codePage, emailPage, passwordPage } from '../sign-in-pages';

export interface InteractionDependencies {
  provider: Provider;
  db: Db;
  /** Clients as the provider reads them (kept between requests, platform/store/client-reads.ts). */
  clients: ClientReads;
  config: AppConfig;
  ring: KeyRing;
  run: WorkflowRunner;
  /** Home-realm discovery and the way back from an upstream provider. */
  federation: Federation;
  /** The confirmation mail, sent again from the page that says an address is not confirmed yet. */
  mails: RecoveryMails;
  /** The cutover's read-through window, while it is configured. */
  readThrough?: SourceReadThrough;
  /** Self-service registration (the sign-up page), the path the API's register route takes too. */
  registration: Registration;
}

export type InteractionDetails = Awaited<ReturnType<Provider['interactionDetails']>>;

const readThisRequest = new WeakMap<Request, Promise<InteractionDetails>>();

/**
 * oidc-provider's interactionDetails, read once per request: the sign-in router looks at a page's interaction before
 * the page does (a browser with the source's session cookie goes straight back to its authorization), and each read is
 * the interaction and its session again. The same request sees the same interaction, refusal included.
 */
export function interactionOf(provider: Provider, req: Request, res: Response): Promise<InteractionDetails> {
  let details = readThisRequest.get(req);
  if (!details) {
    details = provider.interactionDetails(req, res);
    readThisRequest.set(req, details);
  }
  return details;
}

/** What a step leaves in the interaction for the authorization to resume with (a login, a consent, an error). */
export type InteractionOutcome = Parameters<Provider['interactionResult']>[2];

/**
 * oidc-provider's interactionResult on the interaction this request has read already: the provider's own reads the
 * interaction and its session again, one or two store round trips per step. Not looking again loses no check: the
 * authorization's resume reads both, refuses an interaction of another browser session, asks to sign out first when
 * the login names another account than the session's, and refuses a grant of another account.
 */
async function recordOutcome(details: InteractionDetails, outcome: InteractionOutcome, merge: boolean) {
  details.result = merge && !('error' in outcome) ? { ...details.lastSubmission, ...outcome } : outcome;
  await details.persist();
  return details.returnTo;
}

/**
 * The user's security stamp as the password step read it, before the password was checked, kept with the login for
 * the authorization's resume (find-account.ts). Every end of the user's sign-ins changes the stamp in the same
 * transaction that deletes the sign-ins in flight (endSignInsIn); a password step that read the user before that and
 * saves its login after it would otherwise open a session its user had just ended everywhere (by a password change,
 * say). ASP.NET Identity's SecurityStampValidator compares a cookie's stamp the same way.
 */
export interface SignedInAsOf {
  signedInAsOf: { stamp: string | null };
}

/** What a password check leaves in the interaction while the second factor is asked for. */
export interface PendingSecondFactor {
  secondFactor: { accountId: string } & SignedInAsOf;
}

/** What a password check leaves while the address waits for its confirmation (Auth:RequireConfirmedEmail). */
export interface PendingConfirmation {
  unconfirmed: { accountId: string; email: string };
}

/** What every step of the interaction shares: its dependencies, its pages and its answers. */
export type InteractionContext = ReturnType<typeof createInteractionContext>;

export function createInteractionContext(deps: InteractionDependencies) {
  const { db, config } = deps;
  const action = (uid: string, step: string) => `/interaction/${encodeURIComponent(uid)}/${step}`;
  const html = (res: Response, status: number, body: string) => res.status(status).type('html').send(body);
  const restart = (uid: string) => action(uid, 'restart');
  const forgot = (uid: string, email: string) =>
    `${RECOVERY_PATHS.forgot}?email=${encodeURIComponent(email)}&return=${encodeURIComponent(uid)}`;
  return {
    ...deps,
    /** The client an interaction is for, from the same copies the provider reads (platform/store/client-reads.ts). */
    client: (clientId: string): Promise<ClientRow | undefined> => deps.clients.find(clientId),
    action,
    html,
    forgot,
    /** The step's outcome, kept in the interaction (a pending second factor or confirmation, a fresh start). */
    record: (details: InteractionDetails, outcome: InteractionOutcome, { merge = false } = {}) =>
      recordOutcome(details, outcome, merge),
    /** As oidc-provider's interactionFinished: the outcome, then back to the authorization to resume. */
    finish: async (res: Response, details: InteractionDetails, outcome: InteractionOutcome, { merge = false } = {}) => {
      const returnTo = await recordOutcome(details, outcome, merge);
      res.status(303).set({ Location: returnTo, 'Content-Length': '0' }).end();
    },
    /** An event of the audit trail, with the client and the client address of the sign-in. */
    audit: (req: Request, details: InteractionDetails, event: Omit<AuditEvent, 'clientId' | 'clientAddress'>) =>
      recordAuditEvent(db, { ...event, clientId: String(details.params.client_id), clientAddress: req.ip }),
    passwordStep: (uid: string, email: string, error?: string) =>
      passwordPage(action(uid, 'password'), email, restart(uid), forgot(uid, email), error),
    codeStep: (uid: string, error?: string) => codePage(action(uid, 'code'), restart(uid), error),
    /** The e-mail step again (naming the client as the first one did), with what went wrong. */
    emailStep: async (res: Response, status: number, details: InteractionDetails, error?: string, email?: string) => {
      const clientId = String(details.params.client_id);
      // Through the provider's client look-up, so the admin pages' built-in client is named too.
      const clientName = (await deps.provider.Client.find(clientId))?.clientName ?? clientId;
      const signUp = config.Auth.AllowRegistration ? action(details.uid, 'sign-up') : undefined;
      return html(res, status, emailPage(action(details.uid, 'email'), clientName, error, email, signUp));
    },
    /** The per-address budget across every account; a refusal says when to come back. */
    overBudget: (req: Request) => overSignInBudget(db, config, req.ip),
    /**
     * The one answer for every failed password: an unknown e-mail and a locked account read the same as a wrong
     * password, so the page tells no one whether an account exists; it says how the lockout works instead.
     */
    wrongCredentials: () => {
      const { MaxFailedAttempts, Minutes } = config.Auth.Lockout;
      return `The e-mail or password is not right. After ${MaxFailedAttempts} failed attempts an account is locked for ${Minutes} minute${Minutes === 1 ? '' : 's'}.`;
    },
    ssoRequired: (domain: string) =>
      `Accounts of ${domain} sign in through their organization's sign-in page, not with a password here. Start again from the application and enter your e-mail address.`,
    tooMany: () =>
      `Too many sign-in attempts from this network; wait ${config.Auth.SignInRateLimit.WindowSeconds} seconds and try again.`,
  };
}
