import type { ClientConfig } from '../../platform/config/config-schema';
import { clientSecretMatches, tagSecret } from '../../platform/security/client-secrets';
import type { ClientRow, NewClientRow, StoredSecret } from '../../platform/store/clients';
import {
  DEVICE_CODE_GRANT,
  isBackChannelLogoutUri,
  PASSWORD_GRANT,
  unsupportedSettingsOf,
} from '../../platform/config/client-rules';

/** IdentityServer client settings the provider reads, under IdentityServer's names (as the migration stores them). */
export interface ClientSettings {
  RequireClientSecret?: boolean;
  RequirePkce?: boolean;
  RequireConsent?: boolean;
  /** Whether "Remember my decision" is offered on consent; IdentityServer's default is true. */
  AllowRememberConsent?: boolean;
  /** How long a remembered consent lasts, in seconds; none: until withdrawn. */
  ConsentLifetime?: number | null;
  /** The client's home page: where pages that end a path send the person back to. */
  ClientUri?: string | null;
  AllowOfflineAccess?: boolean;
  AccessTokenLifetime?: number;
  IdentityTokenLifetime?: number;
  AuthorizationCodeLifetime?: number;
  AbsoluteRefreshTokenLifetime?: number;
  SlidingRefreshTokenLifetime?: number;
  /** 0 ReUse, 1 OneTimeOnly. */
  RefreshTokenUsage?: number;
  /** 0 Sliding, 1 Absolute (IdentityServer's default). */
  RefreshTokenExpiration?: number;
  /** 0 Jwt, 1 Reference (an opaque handle the APIs introspect). */
  AccessTokenType?: number;
  /** Set by the migration on the clients it made of ApiResources: an audience, not a client. */
  apiResource?: boolean;
  /** Where logout tokens are posted (OpenID Connect Back-Channel Logout 1.0). */
  BackChannelLogoutUri?: string | null;
  /** Whether logout tokens carry the session id (`sid`); IdentityServer's default is true. */
  BackChannelLogoutSessionRequired?: boolean;
}

export const settingsOf = (row: Pick<ClientRow, 'settings'>) => row.settings as ClientSettings;

/**
 * A stored client as oidc-provider's client metadata. The secret itself is never known: `client_secret` is a stand-in
 * that nothing compares (compareClientSecret checks the stored hashes), and no HMAC algorithm is enabled that would
 * use it as a key. `scope` holds the client's identity scopes (the provider refuses a client naming others); its API
 * scopes travel in the allowed-scopes property, for the resource server to grant only those.
 */
export function clientMetadata(row: ClientRow, identityScopes: ReadonlySet<string>): Record<string, unknown> {
  const settings = settingsOf(row);
  const grants = row.grant_types;
  const code = grants.includes('authorization_code');
  const isPublic = settings.RequireClientSecret === false;
  return {
    client_id: row.client_id,
    client_name: row.client_name ?? undefined,
    ...(isPublic
      ? { token_endpoint_auth_method: 'none' }
      : { token_endpoint_auth_method: 'client_secret_post', client_secret: `hashed-secrets-of:${row.client_id}` }),
    grant_types: [
      ...(code ? ['authorization_code'] : []),
      ...((code || grants.includes(DEVICE_CODE_GRANT) || grants.includes(PASSWORD_GRANT)) && settings.AllowOfflineAccess
        ? ['refresh_token']
        : []),
      // A client without a secret cannot prove who it is, so it never gets the client-credentials grant, even when a
      // migrated or stored row says so (the admin API and the configuration refuse that shape).
      ...(grants.includes('client_credentials') && !isPublic ? ['client_credentials'] : []),
      // The device flow (RFC 8628) for TVs and command lines: a person enters the device's code at /device.
      ...(grants.includes(DEVICE_CODE_GRANT) ? [DEVICE_CODE_GRANT] : []),
      // Only a client migrated with it (see password-grant.ts), and only a confidential one: without a secret anyone
      // holding the client id could try passwords through it (client-rules.ts, SECRET_ONLY_GRANT_TYPES).
      ...(grants.includes(PASSWORD_GRANT) && !isPublic ? [PASSWORD_GRANT] : []),
    ],
    response_types: code ? ['code'] : [],
    redirect_uris: code ? row.redirect_uris : [],
    post_logout_redirect_uris: row.post_logout_redirect_uris,
    // IdentityServer grants offline_access by the AllowOfflineAccess setting, not by a scope in AllowedScopes.
    scope:
      [
        ...row.allowed_scopes.filter((s) => identityScopes.has(s)),
        ...((code || grants.includes(DEVICE_CODE_GRANT) || grants.includes(PASSWORD_GRANT)) &&
        settings.AllowOfflineAccess
          ? ['offline_access']
          : []),
      ].join(' ') || undefined,
    id_token_signed_response_alg: 'RS256',
    ...(isBackChannelLogoutUri(settings.BackChannelLogoutUri)
      ? {
          backchannel_logout_uri: settings.BackChannelLogoutUri,
          backchannel_logout_session_required: settings.BackChannelLogoutSessionRequired !== false,
        }
      : {}),
    'urn:identity-service:settings': settings,
    'urn:identity-service:cors-origins': row.cors_origins,
    'urn:identity-service:allowed-scopes': row.allowed_scopes,
    'urn:identity-service:client-claims': row.claims,
  };
}

/**
 * The stored hashes of a client's unexpired secrets, read with the client (findClientWithLiveSecrets, kept by
 * client-reads.ts until the first of them expires), so authenticating it costs no second read. Only hashes, only in
 * this process's copy of the client: no endpoint shows client metadata (dynamic registration is off).
 */
export const SECRET_HASHES = 'urn:identity-service:secret-hashes';

/** The extra client metadata properties clientMetadata sets, declared to the provider. */
export const EXTRA_CLIENT_METADATA = [
  'urn:identity-service:settings',
  'urn:identity-service:cors-origins',
  'urn:identity-service:allowed-scopes',
  'urn:identity-service:client-claims',
  SECRET_HASHES,
];

const metadataOfClient = new WeakMap<object, Record<string, unknown>>();

/**
 * A client's metadata, built once per client: oidc-provider's `metadata()` maps every property to snake_case again at
 * each call, and a token request asks several times (secret, scopes, lifetimes, resource, token shape); it was the
 * largest difference in CPU between the service's client-credentials grant and the bare provider's. A Client does not
 * change: oidc-provider builds a new one when the stored client's metadata differs.
 */
export function metadataOf(client: { metadata(): Record<string, unknown> }): Readonly<Record<string, unknown>> {
  let metadata = metadataOfClient.get(client);
  if (!metadata) {
    metadata = Object.freeze(client.metadata());
    metadataOfClient.set(client, metadata);
  }
  return metadata;
}

/** Every scope a client may ask for (IdentityServer's AllowedScopes), API scopes included. */
export const allowedScopesOf = (client: { metadata(): Record<string, unknown> }) =>
  (metadataOf(client)['urn:identity-service:allowed-scopes'] as string[] | undefined) ?? [];

/**
 * A presented secret authenticates the client when it matches any of its unexpired stored hashes. Every hash is
 * checked, so the time taken does not tell which one matched.
 */
export const matchesAnyHash = (hashes: string[], secret: string): boolean =>
  hashes.map((hash) => clientSecretMatches(secret, hash)).includes(true);

/**
 * A client in IdentityServer's appsettings shape as a row of the clients store. Its secrets are not part of it: the
 * configuration holds their digests (see configuredSecrets), the admin API their plaintext (hashed on the way in).
 */
export function clientRow(
  client: ClientConfig,
  origin: 'configuration' | 'api',
  provisioningApps: string[] = [],
): NewClientRow {
  const {
    ClientId,
    ClientName,
    Enabled,
    ClientSecrets: _secrets,
    AllowedGrantTypes,
    RedirectUris,
    PostLogoutRedirectUris,
    AllowedScopes,
    AllowedCorsOrigins,
    ...settings
  } = client;
  return {
    client_id: ClientId,
    client_name: ClientName ?? null,
    enabled: Enabled,
    settings: JSON.stringify(settings),
    allowed_scopes: JSON.stringify(AllowedScopes),
    grant_types: JSON.stringify(AllowedGrantTypes),
    redirect_uris: JSON.stringify(RedirectUris),
    post_logout_redirect_uris: JSON.stringify(PostLogoutRedirectUris),
    cors_origins: JSON.stringify(AllowedCorsOrigins),
    claims: JSON.stringify([]),
    provisioning_apps: JSON.stringify(provisioningApps),
    origin,
  };
}

/** The configured secrets: IdentityServer's configuration holds each as its SHA-256 or SHA-512 digest in base64. */
export function configuredSecrets(client: ClientConfig): StoredSecret[] {
  return client.ClientSecrets.map((secret, index) => {
    const value = tagSecret(secret.Value);
    if (!value)
      throw new Error(
        `Clients: ${client.ClientId}: ClientSecrets ${index}: Value must be the secret's SHA-256 or SHA-512 hash in base64, as IdentityServer's configuration holds it ("secret".Sha256())`,
      );
    return { value, description: secret.Description ?? null, expiration: secret.Expiration ?? null };
  });
}

/** A stored client in the admin API's shape (IdentityServer's names); secrets are write-only and never shown. */
export function clientView(row: ClientRow) {
  return {
    ClientId: row.client_id,
    ClientName: row.client_name,
    Enabled: row.enabled,
    ...settingsOf(row),
    AllowedGrantTypes: row.grant_types,
    RedirectUris: row.redirect_uris,
    PostLogoutRedirectUris: row.post_logout_redirect_uris,
    AllowedScopes: row.allowed_scopes,
    AllowedCorsOrigins: row.cors_origins,
    ClientClaims: row.claims.map((claim) => ({ Type: claim.type, Value: claim.value })),
    ProvisioningApps: row.provisioning_apps,
    origin: row.origin,
    // What will not work as it did at IdentityServer: the operator reads this before the cutover.
    unsupportedSettings: unsupportedSettingsOf(settingsOf(row) as Record<string, unknown>, row.grant_types),
  };
}
