import { randomBytes } from 'node:crypto';
import express, { Router, type Response } from 'express';
import { FEDERATION_CALLBACK_PATH } from '../sign-in-paths';
import { accountReadyPage, renderErrorPage } from '../oidc/sign-in-pages';
import { errorReference } from '../oidc/error-page';
import type { OidcAdapter } from '../oidc/adapter';
import { federatedUser, type FederatedIdentity } from './federated-accounts';
import { FederationCheckError } from './federation-errors';
import type { FederationDependencies } from './federation-dependencies';
import type { createSamlSignIn } from './saml';
import type { createUpstreamOidc } from './upstream-oidc';

/** How long the browser has to come back from the callback to its sign-in interaction. */
const TICKET_SECONDS = 120;

/** What the callback routes hand a completed upstream sign-in to, and how they refuse one. */
interface RouteContext {
  deps: FederationDependencies;
  log: (line: string) => void;
  tickets: OidcAdapter;
  upstream: ReturnType<typeof createUpstreamOidc>;
  saml: ReturnType<typeof createSamlSignIn>;
}

function refuse(res: Response, message: string, retryAfterSeconds?: number) {
  if (retryAfterSeconds !== undefined) res.status(503).setHeader('Retry-After', String(retryAfterSeconds));
  else res.status(400);
  return res.type('html').send(renderErrorPage(message));
}

/**
 * Who signed in upstream becomes a user here; a ticket takes them back to their sign-in interaction. An IdP-initiated
 * sign-in has none: the account is ready (created, provisioned, linked), and the page says how to go on.
 */
async function finish(
  { deps, tickets }: RouteContext,
  res: Response,
  completed: { interactionUid?: string; identity: FederatedIdentity },
) {
  const outcome = await federatedUser(deps, completed.identity);
  if (outcome.status === 'refused') return refuse(res, outcome.reason, outcome.retryAfterSeconds);
  if (!completed.interactionUid) return res.type('html').send(accountReadyPage(completed.identity.providerName));
  const ticket = randomBytes(24).toString('base64url');
  await tickets.upsert(ticket, { interactionUid: completed.interactionUid, userId: outcome.userId }, TICKET_SECONDS);
  res.redirect(303, `/interaction/${encodeURIComponent(completed.interactionUid)}/federated?ticket=${ticket}`);
}

/**
 * A failed check: a 400 page in plain words with a reference, the check that failed in the log line under it (with
 * the provider), nothing created.
 */
function checkFailed(
  _context: RouteContext,
  res: Response,
  kind: 'OIDC' | 'SAML',
  error: unknown,
  providerId?: string,
) {
  if (!(error instanceof FederationCheckError)) throw error;
  const provider = error.providerId ?? providerId ?? '(unknown)';
  const reference = errorReference(
    undefined,
    `federation: a sign-in through ${kind} provider ${provider} was refused: ${error.message}`,
    { provider },
  );
  res.status(400);
  res
    .type('html')
    .send(
      renderErrorPage(
        'Sign-in through your organization did not work. Start again from the application; if it keeps failing, give your support the reference below.',
        { title: 'Sign-in did not work', reference },
      ),
    );
}

/**
 * The upstream OpenID Connect callback (spec trigger `GET /oidc/callback`), the SAML assertion consumer service (spec
 * trigger `POST /saml/{id}/acs`) and SP metadata.
 */
export function federationRoutes(context: RouteContext): Router {
  const { deps, upstream, saml } = context;
  const router = Router();
  router.get(FEDERATION_CALLBACK_PATH, async (req, res) => {
    let completed;
    try {
      completed = await upstream.complete(new URL(req.originalUrl, deps.issuer));
    } catch (error) {
      return checkFailed(context, res, 'OIDC', error);
    }
    await finish(context, res, completed);
  });

  router.post(
    '/saml/:id/acs',
    express.urlencoded({ extended: false, limit: '512kb', parameterLimit: 5 }),
    async (req, res) => {
      const body = req.body as Record<string, unknown>;
      if (typeof body.SAMLResponse !== 'string') return refuse(res, 'The request carries no SAMLResponse.');
      let completed;
      try {
        completed = await saml.consume(req.params.id, body.SAMLResponse);
      } catch (error) {
        return checkFailed(context, res, 'SAML', error, req.params.id);
      }
      await finish(context, res, completed);
    },
  );

  router.get('/saml/:id/metadata', async (req, res) => {
    const metadata = await saml.metadata(req.params.id);
    if (!metadata) return res.status(404).type('text').send(`no SAML provider ${req.params.id}`);
    res.type('application/samlmetadata+xml').send(metadata);
  });
  return router;
}
