import { createHash } from 'node:crypto';
import * as oidc from 'openid-client';
import type { KeyRing } from '../../platform/security/data-protection';
import type { GuardedFetch } from '../../platform/security/guarded-fetch';
import { oidcClientSecret, type OidcProviderRow } from '../store/sso-provider-configs';
import { FederationCheckError } from './federation-errors';

/** A provider's openid-client configuration, by its setting. */
export type ConfigurationOf = (row: OidcProviderRow) => Promise<oidc.Configuration>;

/**
 * Discovery once per provider setting (a changed authority, client or secret discovers again); a failed discovery is
 * forgotten, so the next sign-in tries again.
 */
export function createDiscovery(ring: KeyRing, fetch: GuardedFetch): ConfigurationOf {
  const configurations = new Map<string, Promise<oidc.Configuration>>();
  return (row) => {
    const secret = oidcClientSecret(row, ring);
    const key = createHash('sha256')
      .update(JSON.stringify([row.id, row.authority, row.client_id, secret]))
      .digest('hex');
    let configuration = configurations.get(key);
    if (!configuration) {
      configuration = oidc
        .discovery(
          new URL(row.authority),
          row.client_id,
          undefined,
          secret === undefined ? oidc.None() : oidc.ClientSecretPost(secret),
          {
            [oidc.customFetch]: fetch as oidc.CustomFetch,
            // The guarded fetch decides which addresses may be called; http is for loopback test providers.
            execute: new URL(row.authority).protocol === 'http:' ? [oidc.allowInsecureRequests] : [],
          },
        )
        .catch((error: Error) => {
          configurations.delete(key);
          throw new FederationCheckError(
            `the discovery document of ${row.authority} could not be read: ${error.message}`,
          );
        });
      configurations.set(key, configuration);
    }
    return configuration;
  };
}
