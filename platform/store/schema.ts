import type { ColumnType, Generated, Insertable, Selectable } from 'kysely';

/** The kysely view of the service's PostgreSQL stores; one interface per table, named after the spec's store. */
/** One e-mail of a user as SCIM carries it (RFC 7643 §4.1.2). */
export interface ScimEmail {
  value: string;
  type?: string;
  primary?: boolean;
}

/** A user's `name` as a SCIM client sent it (RFC 7643 §4.1.1): only the sub-attributes it set. */
export interface ScimName {
  formatted?: string;
  familyName?: string;
  givenName?: string;
  middleName?: string;
  honorificPrefix?: string;
  honorificSuffix?: string;
}

/** The enterprise manager as a SCIM client sent it (RFC 7643 §4.3); its id is also the `manager` custom attribute. */
export interface ScimManager {
  value: string;
  $ref?: string;
  displayName?: string;
}

export interface UsersTable {
  id: string;
  email: string;
  normalized_email: string;
  user_name: string;
  normalized_user_name: string;
  first_name: string | null;
  last_name: string | null;
  company_name: string | null;
  organization_id: string | null;
  custom_attributes: ColumnType<Record<string, string>, string, string>;
  password_hash: string | null;
  external_id: string | null;
  /** How password_hash was made (native, aspnet-v2, aspnet-v3, bcrypt); hashes migrated from a source are kept verbatim. */
  password_format: string | null;
  /** The migration Version that last wrote the user; null for users created by the service. */
  migration_version: string | null;
  active: Generated<boolean>;
  /** ASP.NET Identity's sign-in state, carried over by the migration. */
  two_factor_enabled: Generated<boolean>;
  email_confirmed: Generated<boolean>;
  access_failed_count: Generated<number>;
  lockout_end: Date | null;
  /** Every e-mail a SCIM client sent, with type and primary; null: only `email`. */
  scim_emails: ColumnType<ScimEmail[] | null, string | null | undefined, string | null>;
  /** The `name` a SCIM client sent; shown while its givenName and familyName are still first_name and last_name. */
  scim_name: ColumnType<ScimName | null, string | null | undefined, string | null>;
  /** The manager a SCIM client sent; shown while its value is still the `manager` custom attribute. */
  scim_manager: ColumnType<ScimManager | null, string | null | undefined, string | null>;
  /** Deleted through SCIM (RFC 7644 §3.6): SCIM no longer shows the user; the record stays, deactivated. */
  scim_deleted_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /** When the user was last signed out everywhere: the service's own tokens issued before it no longer count. */
  sessions_revoked_at: Date | null;
  /** ASP.NET Identity's SecurityStamp: carried from the source, new whenever the user's sessions end here. */
  security_stamp: string | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface UserProvisionsTable {
  user_id: string;
  app_id: string;
  transaction_id: string;
  provisioned_at: Generated<Date>;
}

/**
 * Password hashes wait here between the API (which hashes) and the create-user activity (which
 * moves them onto the user row), so no hash ever travels through workflow history.
 */
export interface PendingCredentialsTable {
  id: string;
  password_hash: string;
  created_at: Generated<Date>;
}

/** SCIM bearer tokens, stored as SHA-256 digests: the token itself is shown once, at creation. */
export interface ScimTokensTable {
  id: string;
  token_hash: string;
  description: string | null;
  created_at: Generated<Date>;
  last_used_at: Date | null;
}

export interface ScimGroupsTable {
  id: string;
  display_name: string;
  normalized_display_name: string;
  external_id: string | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface ScimGroupMembersTable {
  group_id: string;
  user_id: string;
  /** The member's place in the list the client sent. */
  position: Generated<number>;
  display: string | null;
  type: string | null;
  ref: string | null;
}

/** Apps of the store-backed provider (Provisioning:AppProvider = Store). */
export interface ProvisioningAppsTable {
  app_id: string;
  callback_url: string;
  /** Sealed with the data-protection key ring (security/data-protection.ts) when api_key_protected. */
  api_key: string;
  api_key_protected: Generated<boolean>;
  try_timeout_seconds: number;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

type Json<T> = ColumnType<T, string, string>;

export interface CreationReservationsTable {
  normalized_email: string;
  workflow_id: string;
  created_at: Generated<Date>;
}

/** What a deletion or deactivation step answered, under its workflow run's key (store/user-removals.ts). */
/**
 * A client to tell that a user's session with it ended (OpenID Connect Back-Channel Logout): the client, and the
 * session id (`sid`) its ID tokens carried.
 */
export interface SignOutNotice {
  clientId: string;
  sid: string;
}

export interface UserRemovalsTable {
  removal_id: string;
  found: boolean;
  app_ids: Json<string[]>;
  /** The clients told of the sign-out (back-channel logout), each with its session id. */
  sign_outs: ColumnType<SignOutNotice[], string | undefined, string>;
  created_at: Generated<Date>;
}

export interface IdempotencyKeysTable {
  /** SHA-256 of the caller's credential: one client's keys never meet another's. */
  scope: string;
  key: string;
  /** SHA-256 of the request body without its password. */
  fingerprint: string;
  /** The HTTP answer, once the attempt has one: `{ status, body }`. */
  answer: ColumnType<StoredAnswer | null, string | null, string | null>;
  created_at: Generated<Date>;
}

export interface StoredAnswer {
  status: number;
  contentType: string;
  headers?: Record<string, string>;
  body: unknown;
}

export interface UserLoginsTable {
  login_provider: string;
  provider_key: string;
  provider_display_name: string | null;
  user_id: string;
}

export interface RolesTable {
  id: string;
  name: string;
  normalized_name: string;
}

export interface UserRolesTable {
  user_id: string;
  role_id: string;
}

export interface ScopesTable {
  name: string;
  kind: 'identity' | 'api' | 'resource';
  display_name: string | null;
  description: string | null;
  enabled: Generated<boolean>;
  required: Generated<boolean>;
  emphasize: Generated<boolean>;
  show_in_discovery: Generated<boolean>;
  user_claims: Json<string[]>;
  /** seed, migration or api. */
  origin: string;
  created_at: Generated<Date>;
}

export interface ClientsTable {
  client_id: string;
  client_name: string | null;
  enabled: Generated<boolean>;
  settings: Json<Record<string, unknown>>;
  allowed_scopes: Json<string[]>;
  grant_types: Json<string[]>;
  redirect_uris: Json<string[]>;
  post_logout_redirect_uris: Json<string[]>;
  cors_origins: Json<string[]>;
  claims: Json<Array<{ type: string; value: string }>>;
  provisioning_apps: Json<string[]>;
  /** configuration (seeded), migration or api. */
  origin: string;
  created_at: Generated<Date>;
}

export interface ClientSecretsTable {
  id: string;
  client_id: string;
  /** Tagged by digest: SHA256$… or SHA512$…. */
  value: string;
  description: string | null;
  expiration: Date | null;
  created_at: Generated<Date>;
}

export interface SamlProvidersTable {
  id: string;
  name: string;
  entity_id: string;
  sso_url: string;
  signing_certificate: string | null;
  enabled: boolean;
  /** The source's LoginProvider scheme names that mean this provider; empty: its id. */
  login_provider_names: ColumnType<string[], string | undefined, string>;
  /** The service's entity id towards this IdP; null: {Api:PublicUrl}/saml/{id}. */
  sp_entity_id: string | null;
  /** Whether a response the service did not ask for is taken (off: refused). */
  allow_idp_initiated: Generated<boolean>;
  /** Whether it may create accounts for addresses outside its SSO domains (off: it speaks only for its own). */
  allow_other_domains: Generated<boolean>;
}

export interface OidcProvidersTable {
  id: string;
  name: string;
  authority: string;
  client_id: string;
  client_secret: string | null;
  scopes: Json<string[]>;
  enabled: boolean;
  /** The source's LoginProvider scheme names that mean this provider; empty: its id. */
  login_provider_names: ColumnType<string[], string | undefined, string>;
  /** Whether client_secret is sealed under the data-protection ring (rows the migration wrote before are not). */
  client_secret_sealed: Generated<boolean>;
  /** Whether it may create accounts for addresses outside its SSO domains (off: it speaks only for its own). */
  allow_other_domains: Generated<boolean>;
}

export interface SsoDomainsTable {
  domain: string;
  provider_kind: 'saml' | 'oidc';
  provider_id: string;
}

export interface MfaCredentialsTable {
  id: string;
  user_id: string;
  kind: 'totp' | 'recovery-code';
  label: string;
  /** TOTP: encrypted with the data-protection key; recovery codes: keyed hash. */
  secret: string;
  /** TOTP: the time step of the last code accepted (bigint, read as a string). */
  last_used_step: ColumnType<string | null, number | null, number | null>;
  created_at: Generated<Date>;
}

export interface GrantsTable {
  key: string;
  type: string;
  subject_id: string | null;
  session_id: string | null;
  client_id: string;
  description: string | null;
  creation_time: Date;
  expiration: Date | null;
  consumed_time: Date | null;
  data: string;
  /** The key is the source's hash of the handle (a stock IdentityServer's), not the handle. */
  key_hashed: Generated<boolean>;
  /** `data` is sealed under the service's data-protection ring. */
  data_sealed: Generated<boolean>;
}

export interface SigningKeysTable {
  id: string;
  algorithm: string;
  /** The public JWK once sealed; rows stored before sealing existed hold the private JWK until the next start. */
  jwk: Json<Record<string, unknown>>;
  /** The private JWK sealed under the data-protection key ring; null until sealed. */
  sealed_private: string | null;
  /** The key's own creation time; a migrated key keeps the source's. */
  created_at: Generated<Date>;
  /** When the key arrived in this store. */
  stored_at: Generated<Date>;
  origin: Generated<'generated' | 'migrated' | 'static'>;
}

/** One artefact of the OpenID Connect provider (oidc-provider's adapter models). */
export interface OidcPayloadsTable {
  model: string;
  id: string;
  payload: Json<Record<string, unknown>>;
  grant_id: string | null;
  user_code: string | null;
  uid: string | null;
  expires_at: Date | null;
  consumed_at: Date | null;
}

export interface RevokedAccessTokensTable {
  jti: string;
  expires_at: Date;
}

/** A user deleted or deactivated here: never read through from the source again, nor swept back (0016). */
export interface SourceUserTombstonesTable {
  user_id: string;
  reason: 'deleted' | 'deactivated';
  created_at: Generated<Date>;
}

/** Source look-ups of the read-through window in one window of time, shared by every instance (0016). */
export interface ReadThroughBudgetTable {
  window_seconds: number;
  slot: string;
  used: number;
}

/** The read-through window's look-ups by kind and outcome, every instance's together (0029). */
export interface ReadThroughTalliesTable {
  kind: string;
  outcome: string;
  count: ColumnType<string, number | undefined, number>;
  first_at: Generated<Date>;
  last_at: Generated<Date>;
}

export interface SignInAttemptsTable {
  address: string;
  at: Generated<Date>;
}

/** A request a budget counted (platform/store/rate-limits.ts). */
export interface RateLimitHitsTable {
  bucket: string;
  key: string;
  at: Generated<Date>;
  expires_at: Date;
}

/** A link the service mailed (password reset, e-mail confirmation): only the token's digest is kept. */
/** Where a sign-in (the provider's session, by its id) came from, as the account page shows it. */
export interface SessionDevicesTable {
  session_id: string;
  user_id: string;
  client_address: string | null;
  user_agent: string | null;
  signed_in_at: Generated<Date>;
}

export interface AccountTokensTable {
  token_hash: string;
  purpose: 'password-reset' | 'email-confirmation' | 'email-change';
  user_id: string;
  /** An `email-change` token's new address, which its link confirms; null for the other purposes. */
  new_email: Generated<string | null>;
  /**
   * A digest of what the token was made for (the password hash, the address, the last end of every sign-in): a change
   * of any of them since makes the token dead.
   */
  stamp: string;
  created_at: Generated<Date>;
  expires_at: Date;
  used_at: Date | null;
}

/** What happened to an account and who did it; never a password, code, token or secret. */
export interface AuditEventsTable {
  id: Generated<string>;
  at: Generated<Date>;
  type: string;
  user_id: string | null;
  client_id: string | null;
  client_address: string | null;
  /** Who acted when not the user: `admin` (an admin API key), `admin:{userId}` or `client:{clientId}`. */
  actor: string | null;
  detail: ColumnType<Record<string, string | number | boolean>, string | undefined, string>;
}

export interface MigrationMarkersTable {
  version: string;
  state: 'Started' | 'Completed' | 'Failed';
  dry_run: boolean;
  started_at: Generated<Date>;
  finished_at: Date | null;
  progress: Json<Record<string, unknown>>;
  report: Json<Record<string, unknown>> | null;
}

/** The source's Data Protection key ring, one XML document a row, sealed with the service's ring. */
export interface SourceKeyRingTable {
  name: string;
  sealed_xml: string;
  copied_at: Date;
}

export interface Database {
  account_tokens: AccountTokensTable;
  session_devices: SessionDevicesTable;
  audit_events: AuditEventsTable;
  user_logins: UserLoginsTable;
  roles: RolesTable;
  user_roles: UserRolesTable;
  scopes: ScopesTable;
  clients: ClientsTable;
  client_secrets: ClientSecretsTable;
  saml_providers: SamlProvidersTable;
  oidc_providers: OidcProvidersTable;
  sso_domains: SsoDomainsTable;
  mfa_credentials: MfaCredentialsTable;
  grants: GrantsTable;
  signing_keys: SigningKeysTable;
  oidc_payloads: OidcPayloadsTable;
  sign_in_attempts: SignInAttemptsTable;
  rate_limit_hits: RateLimitHitsTable;
  migration_markers: MigrationMarkersTable;
  users: UsersTable;
  user_provisions: UserProvisionsTable;
  pending_credentials: PendingCredentialsTable;
  scim_tokens: ScimTokensTable;
  scim_groups: ScimGroupsTable;
  scim_group_members: ScimGroupMembersTable;
  provisioning_apps: ProvisioningAppsTable;
  creation_reservations: CreationReservationsTable;
  idempotency_keys: IdempotencyKeysTable;
  user_removals: UserRemovalsTable;
  revoked_access_tokens: RevokedAccessTokensTable;
  source_user_tombstones: SourceUserTombstonesTable;
  read_through_budget: ReadThroughBudgetTable;
  read_through_tallies: ReadThroughTalliesTable;
  source_key_ring: SourceKeyRingTable;
}

export type UserRow = Selectable<UsersTable>;
export type NewUserRow = Insertable<UsersTable>;
