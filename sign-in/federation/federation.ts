import { randomBytes } from 'node:crypto';
import express, { Router, type Response } from 'express';
import type { WorkflowRunner } from '../../provisioning/workflow-runner';
import { createPostgresAdapter } from '../oidc/adapter';
import { FEDERATION_CALLBACK_PATH } from '../sign-in-paths';
import { accountReadyPage, renderErrorPage } from '../oidc/pages';
import type { AllowList } from '../../platform/security/callback-address';
import type { KeyRing } from '../../platform/security/data-protection';
import { createGuardedFetch } from '../../platform/security/guarded-fetch';
import type { SourceReadThrough } from '../read-through';
import type { Db } from '../../platform/store/database';
import { findOidcProvider, findSamlProvider, findSsoProvider, sealOidcProviderSecrets } from '../store/federation';
import { federatedUser, type FederatedIdentity } from './accounts';
import { createSamlSignIn } from './saml';
import { FederationCheckError } from './errors';
import { createUpstreamOidc } from './upstream-oidc';
import { logger } from '../../platform/observability/logger';

/** How long the browser has to come back from the callback to its sign-in interaction. */
const TICKET_SECONDS = 120;

export interface FederationDependencies {
  db: Db;
  ring: KeyRing;
  run: WorkflowRunner;
  /** Api:PublicUrl. */
  issuer: string;
  /** Auth:AllowedInternalTargets: which internal addresses an upstream provider may have. */
  allow: AllowList;
  log?: (line: string) => void;
  /** The cutover's read-through window (Migration:ReadThrough), while it is configured. */
  readThrough?: SourceReadThrough;
}

/**
 * Federated sign-in: home-realm discovery (an e-mail domain that is an SSO domain goes to its provider), the upstream
 * OpenID Connect callback (spec trigger `GET /oidc/callback`), the SAML assertion consumer service (spec trigger
 * `POST /saml/{id}/acs`) and SP metadata, and the ticket that hands the signed-in user back to
 * the sign-in interaction (whose cookie is scoped to its own path, so the callback cannot finish it itself).
 */
export async function createFederation(deps: FederationDependencies) {
  const { db, ring, log = (line: string) => logger.warn(line) } = deps;
  const sealed = await sealOidcProviderSecrets(db, ring);
  if (sealed > 0) log(`federation: sealed the client secrets of ${sealed} OIDC providers stored in plaintext`);
  const adapter = createPostgresAdapter(db);
  const tickets = adapter('FederatedLogin');
  const fetch = createGuardedFetch(deps.allow);
  const upstream = createUpstreamOidc({
    db,
    ring,
    redirectUri: `${deps.issuer}${FEDERATION_CALLBACK_PATH}`,
    fetch,
    pending: adapter('UpstreamLogin'),
  });

  const saml = createSamlSignIn({
    db,
    issuer: deps.issuer,
    requests: adapter('SamlRequest'),
    assertions: adapter('SamlAssertion'),
  });

  const refuse = (res: Response, message: string, retryAfterSeconds?: number) => {
    if (retryAfterSeconds !== undefined) res.status(503).setHeader('Retry-After', String(retryAfterSeconds));
    else res.status(400);
    return res.type('html').send(renderErrorPage(message));
  };

  /**
   * Who signed in upstream becomes a user here; a ticket takes them back to their sign-in interaction. An IdP-initiated
   * sign-in has none: the account is ready (created, provisioned, linked), and the page says how to go on.
   */
  async function finish(res: Response, completed: { interactionUid?: string; identity: FederatedIdentity }) {
    const outcome = await federatedUser(deps, completed.identity);
    if (outcome.status === 'refused') return refuse(res, outcome.reason, outcome.retryAfterSeconds);
    if (!completed.interactionUid) return res.type('html').send(accountReadyPage(completed.identity.providerName));
    const ticket = randomBytes(24).toString('base64url');
    await tickets.upsert(ticket, { interactionUid: completed.interactionUid, userId: outcome.userId }, TICKET_SECONDS);
    res.redirect(303, `/interaction/${encodeURIComponent(completed.interactionUid)}/federated?ticket=${ticket}`);
  }

  /** A failed check: a 400 page that says which, a log line with the provider, nothing created. */
  function checkFailed(res: Response, kind: 'OIDC' | 'SAML', error: unknown, providerId?: string) {
    if (!(error instanceof FederationCheckError)) throw error;
    const provider = error.providerId ?? providerId ?? '(unknown)';
    log(`federation: a sign-in through ${kind} provider ${provider} was refused: ${error.message}`);
    refuse(res, `Sign-in through your organization failed: ${error.message}.`);
  }

  const router = Router();
  router.get(FEDERATION_CALLBACK_PATH, async (req, res) => {
    let completed;
    try {
      completed = await upstream.complete(new URL(req.originalUrl, deps.issuer));
    } catch (error) {
      return checkFailed(res, 'OIDC', error);
    }
    await finish(res, completed);
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
        return checkFailed(res, 'SAML', error, req.params.id);
      }
      await finish(res, completed);
    },
  );

  router.get('/saml/:id/metadata', async (req, res) => {
    const metadata = await saml.metadata(req.params.id);
    if (!metadata) return res.status(404).type('text').send(`no SAML provider ${req.params.id}`);
    res.type('application/samlmetadata+xml').send(metadata);
  });

  return {
    router,
    /**
     * Where an e-mail signs in: the URL of its organization's provider, or undefined for the password step (no SSO
     * domain, or its provider is disabled).
     */
    async startFor(email: string, interactionUid: string): Promise<string | undefined> {
      const sso = await findSsoProvider(db, email.slice(email.lastIndexOf('@') + 1));
      if (sso?.provider_kind === 'oidc') {
        const row = await findOidcProvider(db, sso.provider_id);
        return row?.enabled ? upstream.authorizationUrl(row, interactionUid, email) : undefined;
      }
      if (sso?.provider_kind === 'saml') {
        const row = await findSamlProvider(db, sso.provider_id);
        return row?.enabled ? saml.authorizationUrl(row, interactionUid) : undefined;
      }
      return undefined;
    },
    /** The user a ticket hands back, once, to the interaction it was made for. */
    async takeTicket(ticket: string, interactionUid: string): Promise<string | undefined> {
      const stored = await tickets.find(ticket);
      if (!stored) return undefined;
      await tickets.destroy(ticket);
      return stored.interactionUid === interactionUid ? (stored.userId as string) : undefined;
    },
    close: () => fetch.close(),
  };
}

export type Federation = Awaited<ReturnType<typeof createFederation>>;
