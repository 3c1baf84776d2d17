import { createPostgresAdapter } from '../oidc/adapter';
import { FEDERATION_CALLBACK_PATH } from '../sign-in-paths';
import { createGuardedFetch } from '../../platform/security/guarded-fetch';
import {
  findOidcProvider,
  findSamlProvider,
  findSsoProvider,
  sealOidcProviderSecrets,
} from '../store/sso-provider-configs';
import { federationRoutes } from './federation-routes';
import type { FederationDependencies } from './federation-dependencies';
import { createSamlSignIn } from './saml';
import { createUpstreamOidc } from './upstream-oidc';
import { logger } from '../../platform/observability/logger';

export type { FederationDependencies } from './federation-dependencies';

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

  const router = federationRoutes({ deps, log, tickets, upstream, saml });

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
