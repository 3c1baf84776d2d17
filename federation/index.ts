import { randomBytes } from 'node:crypto';
import { Router } from 'express';
import type { WorkflowRunner } from '../client/workflow-runner';
import { createPostgresAdapter } from '../oidc/adapter';
import { renderErrorPage } from '../oidc/pages';
import type { AllowList } from '../security/callback-address';
import type { KeyRing } from '../security/data-protection';
import { createGuardedFetch } from '../security/guarded-fetch';
import type { Db } from '../store/database';
import { findOidcProvider, findSsoProvider, sealOidcProviderSecrets } from '../store/federation';
import { federatedUser } from './accounts';
import { createUpstreamOidc, FederationCheckError } from './upstream-oidc';

/** How long the browser has to come back from the callback to its sign-in interaction. */
const TICKET_SECONDS = 120;

export const FEDERATION_CALLBACK_PATH = '/oidc/callback';

export interface FederationDependencies {
  db: Db;
  ring: KeyRing;
  run: WorkflowRunner;
  /** Api:PublicUrl. */
  issuer: string;
  /** Auth:AllowedInternalTargets: which internal addresses an upstream provider may have. */
  allow: AllowList;
  log?: (line: string) => void;
}

/**
 * Federated sign-in: home-realm discovery (an e-mail domain that is an SSO domain goes to its provider), the upstream
 * OpenID Connect callback (spec trigger `GET /oidc/callback`), and the ticket that hands the signed-in user back to
 * the sign-in interaction (whose cookie is scoped to its own path, so the callback cannot finish it itself).
 */
export async function createFederation(deps: FederationDependencies) {
  const { db, ring, log = console.warn } = deps;
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

  const router = Router();
  router.get(FEDERATION_CALLBACK_PATH, async (req, res) => {
    const refuse = (message: string) => res.status(400).type('html').send(renderErrorPage(message));
    let completed;
    try {
      completed = await upstream.complete(new URL(req.originalUrl, deps.issuer));
    } catch (error) {
      if (!(error instanceof FederationCheckError)) throw error;
      log(`federation: an OIDC sign-in was refused: ${error.message}`);
      return refuse(`Sign-in through your organization failed: ${error.message}.`);
    }
    const outcome = await federatedUser(deps, completed.identity);
    if (outcome.status === 'refused') return refuse(outcome.reason);
    const ticket = randomBytes(24).toString('base64url');
    await tickets.upsert(ticket, { interactionUid: completed.interactionUid, userId: outcome.userId }, TICKET_SECONDS);
    res.redirect(303, `/interaction/${encodeURIComponent(completed.interactionUid)}/federated?ticket=${ticket}`);
  });

  return {
    router,
    /**
     * Where an e-mail signs in: the URL of its organization's provider, or undefined for the password step. SAML
     * providers are not offered yet (issue 14): their users get the password step.
     */
    async startFor(email: string, interactionUid: string): Promise<string | undefined> {
      const sso = await findSsoProvider(db, email.slice(email.lastIndexOf('@') + 1));
      if (sso?.provider_kind !== 'oidc') return undefined;
      const row = await findOidcProvider(db, sso.provider_id);
      if (!row?.enabled) return undefined;
      return upstream.authorizationUrl(row, interactionUid, email);
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
