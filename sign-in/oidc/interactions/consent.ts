import type { Request, Response } from 'express';
import { z } from 'zod';
import { findAccountUser } from '../../../platform/store/users';
import { OIDC_ROUTES } from '../../sign-in-paths';
import { findRememberedScopes, rememberConsent } from '../../store/consents';
import { outcomeProblem, refusalInAppsWords } from '../../../provisioning/outcome-answers';
import { errorReference } from '../error-page';
import { provisioningWorkflowId } from '../../../provisioning/workflows/ids';
import { provisionExistingUser } from '../../../provisioning/workflows/provisioning';
import { AttemptInProgressError } from '../../../platform/temporal/run-errors';
import type { ClientRow } from '../../../platform/store/clients';
import { listProvisionedApps } from '../../../platform/store/provisions';
import { findScopeTexts } from '../../store/sign-in-users';
import { settingsOf } from '../provider-clients';
import { consentPage } from '../sign-in-pages';
import { interactionOf, type InteractionContext, type InteractionDetails } from './interaction-context';

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

/** A space-separated request parameter's words. */
const wordsOf = (value: unknown) => (typeof value === 'string' ? value.split(' ').filter(Boolean) : []);

/** Every scope the request asks for that the client may have (IdentityServer's AllowedScopes, offline_access). */
function requestedScopes(details: InteractionDetails, client: ClientRow): string[] {
  const allowed = new Set([
    ...client.allowed_scopes,
    ...(settingsOf(client).AllowOfflineAccess ? ['offline_access'] : []),
  ]);
  const missing = [
    ...((details.prompt.details.missingOIDCScope as string[] | undefined) ?? []),
    ...Object.values((details.prompt.details.missingResourceScopes as Record<string, string[]>) ?? {}).flat(),
  ];
  const asked = wordsOf(details.params.scope);
  return [...new Set([...asked.filter((s) => allowed.has(s)), ...missing])];
}

/**
 * Whether the page must ask, as Duende's DefaultConsentService.RequiresConsentAsync decides: only for a client that
 * RequireConsent and asks for something; always when the client does not AllowRememberConsent, for offline_access, or
 * when the request says prompt=consent (AuthorizeInteractionResponseGenerator); else unless a remembered consent
 * holds every scope asked for.
 */
async function mustAsk(ctx: InteractionContext, details: InteractionDetails, client: ClientRow, scopes: string[]) {
  const settings = settingsOf(client);
  if (!settings.RequireConsent || scopes.length === 0) return false;
  if (settings.AllowRememberConsent === false || scopes.includes('offline_access')) return true;
  if (wordsOf(details.params.prompt).includes('consent')) return true;
  const accountId = details.session?.accountId;
  const remembered = accountId ? await findRememberedScopes(ctx.db, accountId, client.client_id) : undefined;
  return !remembered || !scopes.every((s) => remembered.includes(s));
}

/** The consent page when the client requires it and nothing remembered answers for the user; else granted at once. */
export const showConsent =
  (ctx: InteractionContext) => async (req: Request, res: Response, details: InteractionDetails) => {
    const { db, html, action } = ctx;
    const client = await ctx.client(String(details.params.client_id));
    const names = client ? requestedScopes(details, client) : [];
    if (!client || !(await mustAsk(ctx, details, client, names))) return grantConsent(ctx, req, res, details, client);
    const user = details.session?.accountId ? await findAccountUser(db, details.session.accountId) : undefined;
    if (!user) return void res.redirect(303, `/interaction/${encodeURIComponent(details.uid)}`);
    const texts = new Map((await findScopeTexts(db, names)).map((t) => [t.name, t]));
    const scopes = names.map((name) => ({
      name,
      displayName: texts.get(name)?.display_name ?? null,
      description: texts.get(name)?.description ?? null,
    }));
    const uid = details.uid;
    const view = {
      allow: action(uid, 'consent'),
      deny: action(uid, 'abort'),
      switchAccount: action(uid, 'switch'),
      clientName: client.client_name ?? client.client_id,
      email: user.email,
      scopes,
      offerRemember: settingsOf(client).AllowRememberConsent !== false,
    };
    html(res, 200, consentPage(view));
  };

const consentForm = z.object({ remember: z.literal('yes').optional() });

/**
 * "Allow": what was asked is granted; where the client AllowRememberConsent, the decision is remembered when the user
 * ticked "Remember my decision" and forgotten when not, as Duende's AuthorizeInteractionResponseGenerator hands the
 * consent response to UpdateConsentAsync.
 */
export const postConsent = (ctx: InteractionContext) => async (req: Request, res: Response) => {
  const details = await interactionOf(ctx.provider, req, res);
  const client = await ctx.client(String(details.params.client_id));
  const accountId = details.session?.accountId;
  if (client && accountId && settingsOf(client).RequireConsent && settingsOf(client).AllowRememberConsent !== false) {
    const remember = consentForm.safeParse(req.body).data?.remember === 'yes';
    const scopes = remember ? requestedScopes(details, client) : [];
    const lifetimeSeconds = settingsOf(client).ConsentLifetime;
    await rememberConsent(ctx.db, { userId: accountId, clientId: client.client_id, scopes, lifetimeSeconds });
    if (remember)
      await ctx.audit(req, details, {
        type: 'consent-remembered',
        userId: accountId,
        detail: { scopes: scopes.join(' ') },
      });
  }
  await grantConsent(ctx, req, res, details, client);
};

export const postAbort =
  ({ provider }: InteractionContext) =>
  async (req: Request, res: Response) => {
    await provider.interactionFinished(
      req,
      res,
      { error: 'access_denied', error_description: 'the user did not allow access' },
      { mergeWithLastSubmission: false },
    );
  };

/**
 * "Not you?": this browser's session ends, and the same authorization request starts again, at the e-mail step.
 * The clients the session signed in to keep their own sessions until they ask again.
 */
export const postSwitchAccount = (ctx: InteractionContext) => async (req: Request, res: Response) => {
  const { provider } = ctx;
  const details = await interactionOf(provider, req, res);
  const session = await provider.Session.get(provider.createContext(req, res));
  if (session.accountId) await session.destroy();
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(details.params))
    if (typeof value === 'string' || typeof value === 'number') params.set(name, String(value));
    else if (Array.isArray(value)) for (const v of value as unknown[]) params.append(name, String(v));
  params.set('prompt', 'login');
  res.redirect(303, `${OIDC_ROUTES.authorization}?${params.toString()}`);
};

/**
 * Consent: the grant of what the client asked for, after the client's provisioning apps that do not hold the user
 * yet have confirmed it (spec trigger `GET /connect/authorize`). A refusal or failure goes back to the client as
 * `access_denied` with the reason; the next authorization provisions only the apps still missing.
 */
async function grantConsent(
  ctx: InteractionContext,
  req: Request,
  res: Response,
  details: InteractionDetails,
  client: ClientRow | undefined,
): Promise<void> {
  const { provider } = ctx;
  const accountId = details.session?.accountId;
  const clientId = String(details.params.client_id);
  if (!accountId) return void res.redirect(303, `/interaction/${encodeURIComponent(details.uid)}`);
  const refusal = await provisionAtAuthorization(ctx, req, accountId, client);
  if (refusal)
    return ctx.finish(res, details, { error: 'access_denied', error_description: errorDescriptionOf(refusal) });
  const grant = details.grantId
    ? (await provider.Grant.find(details.grantId))!
    : new provider.Grant({ accountId, clientId });
  const missing = details.prompt.details;
  if (missing.missingOIDCScope) grant.addOIDCScope((missing.missingOIDCScope as string[]).join(' '));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims as string[]);
  for (const [indicator, scopes] of Object.entries((missing.missingResourceScopes as Record<string, string[]>) ?? {}))
    grant.addResourceScope(indicator, scopes.join(' '));
  const grantId = await grant.save();
  await ctx.finish(res, details, { consent: { grantId } }, { merge: true });
}

/**
 * Undefined when the user holds every app of the client (or now does), else what the client is told: an app's
 * refusal in its own words, or, for a failure, plain words with a reference to the log line that holds the detail.
 */
async function provisionAtAuthorization(
  { db, run }: InteractionContext,
  req: Request,
  userId: string,
  client: ClientRow | undefined,
): Promise<string | undefined> {
  const wanted = client?.provisioning_apps ?? [];
  if (wanted.length === 0) return undefined;
  const held = new Set(await listProvisionedApps(db, userId));
  const appIds = wanted.filter((app) => !held.has(app));
  if (appIds.length === 0) return undefined;
  try {
    const outcome = await run(provisionExistingUser, {
      workflowId: provisioningWorkflowId(userId),
      args: [{ trigger: 'authorize', userId, appIds }],
      search: { userId, trigger: 'authorize' },
    });
    if (outcome.status === 'provisioned') return undefined;
    const inAppsWords = refusalInAppsWords(outcome);
    if (inAppsWords !== undefined) return inAppsWords;
    const reference = errorReference(req, `provisioning at authorization: ${outcomeProblem(outcome).problem.detail}`);
    return `an application this sign-in needs could not take the account right now; try again later (reference ${reference})`;
  } catch (error) {
    if (error instanceof AttemptInProgressError)
      return 'another provisioning attempt for this user is running; try again in a moment';
    throw error;
  }
}
