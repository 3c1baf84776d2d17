import type { Request, Response } from 'express';
import { outcomeProblem } from '../../../provisioning/outcome-answers';
import { provisioningWorkflowId } from '../../../provisioning/workflows/ids';
import { provisionExistingUser } from '../../../provisioning/workflows/provisioning';
import { AttemptInProgressError } from '../../../platform/temporal/run-errors';
import { findClient, type ClientRow } from '../../../platform/store/clients';
import { listProvisionedApps } from '../../../platform/store/provisions';
import { findScopeTexts } from '../../store/sign-in-users';
import { settingsOf } from '../provider-clients';
import { consentPage } from '../sign-in-pages';
import type { InteractionContext, InteractionDetails } from './interaction-context';

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

/** The consent page when the client requires consent; otherwise consent is granted at once. */
export const showConsent =
  (ctx: InteractionContext) => async (req: Request, res: Response, details: InteractionDetails) => {
    const { db, html, action } = ctx;
    const client = await findClient(db, String(details.params.client_id));
    if (!client || !settingsOf(client).RequireConsent) return grantConsent(ctx, req, res, details, client);
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
    const uid = details.uid;
    const clientName = client.client_name ?? client.client_id;
    html(res, 200, consentPage(action(uid, 'consent'), action(uid, 'abort'), clientName, scopes));
  };

export const postConsent = (ctx: InteractionContext) => async (req: Request, res: Response) => {
  const details = await ctx.provider.interactionDetails(req, res);
  await grantConsent(ctx, req, res, details, await findClient(ctx.db, String(details.params.client_id)));
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
  const refusal = await provisionAtAuthorization(ctx, accountId, client);
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
async function provisionAtAuthorization(
  { db, run }: InteractionContext,
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
    return outcome.status === 'provisioned' ? undefined : outcomeProblem(outcome).problem.detail;
  } catch (error) {
    if (error instanceof AttemptInProgressError)
      return 'another provisioning attempt for this user is running; try again in a moment';
    throw error;
  }
}
