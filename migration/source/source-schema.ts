import type { Generated } from 'kysely';

/**
 * The source database as EF Core creates it: ASP.NET Core Identity, Duende IdentityServer's
 * ConfigurationDbContext and PersistedGrantDbContext, and the source's own SAML/OIDC provider tables.
 * Only the columns the migration reads are typed; the inventory checks the rest by name.
 */
/** What an API resource, an API scope and an identity resource have in common in IdentityServer's configuration store. */
interface NamedResourceRow {
  Id: Generated<number>;
  Enabled: boolean;
  Name: string;
  DisplayName: string | null;
  Description: string | null;
}

/** An API scope and an identity resource have the same columns. */
interface ScopeRow extends NamedResourceRow {
  Required: boolean;
  Emphasize: boolean;
  ShowInDiscoveryDocument: boolean;
}

/** A client's or an API resource's secret: `Value` is the base64 SHA-256 or SHA-512 digest IdentityServer stores. */
interface SecretRow {
  Id: Generated<number>;
  Description: string | null;
  Value: string;
  Expiration: Date | null;
  Type: string;
  Created: Date;
}

export interface SourceDatabase {
  AspNetUsers: {
    Id: string;
    UserName: string | null;
    NormalizedUserName: string | null;
    Email: string | null;
    NormalizedEmail: string | null;
    EmailConfirmed: boolean;
    PasswordHash: string | null;
    SecurityStamp: string | null;
    TwoFactorEnabled: boolean;
    LockoutEnd: Date | null;
    AccessFailedCount: number;
  };
  AspNetUserClaims: { Id: Generated<number>; UserId: string; ClaimType: string | null; ClaimValue: string | null };
  AspNetUserLogins: { LoginProvider: string; ProviderKey: string; ProviderDisplayName: string | null; UserId: string };
  AspNetRoles: { Id: string; Name: string | null; NormalizedName: string | null };
  AspNetUserRoles: { UserId: string; RoleId: string };
  AspNetUserTokens: { UserId: string; LoginProvider: string; Name: string; Value: string | null };
  ApiScopes: ScopeRow;
  ApiScopeClaims: { Id: Generated<number>; ScopeId: number; Type: string };
  IdentityResources: ScopeRow;
  IdentityResourceClaims: { Id: Generated<number>; IdentityResourceId: number; Type: string };
  ApiResources: NamedResourceRow;
  ApiResourceClaims: { Id: Generated<number>; ApiResourceId: number; Type: string };
  ApiResourceScopes: { Id: Generated<number>; ApiResourceId: number; Scope: string };
  ApiResourceSecrets: SecretRow & { ApiResourceId: number };
  Clients: {
    Id: Generated<number>;
    Enabled: boolean;
    ClientId: string;
    ProtocolType: string;
    RequireClientSecret: boolean;
    ClientName: string | null;
    Description: string | null;
    RequireConsent: boolean;
    RequirePkce: boolean;
    AllowOfflineAccess: boolean;
    AllowAccessTokensViaBrowser: boolean;
    AccessTokenLifetime: number;
    IdentityTokenLifetime: number;
    AuthorizationCodeLifetime: number;
    AbsoluteRefreshTokenLifetime: number;
    SlidingRefreshTokenLifetime: number;
    RefreshTokenUsage: number;
    RefreshTokenExpiration: number;
    AccessTokenType: number;
    EnableLocalLogin: boolean;
    FrontChannelLogoutUri: string | null;
    BackChannelLogoutUri: string | null;
    ClientClaimsPrefix: string | null;
    AlwaysSendClientClaims: boolean;
    AlwaysIncludeUserClaimsInIdToken: boolean;
    Created: Date;
  };
  ClientSecrets: SecretRow & { ClientId: number };
  ClientScopes: { Id: Generated<number>; Scope: string; ClientId: number };
  ClientRedirectUris: { Id: Generated<number>; RedirectUri: string; ClientId: number };
  ClientPostLogoutRedirectUris: { Id: Generated<number>; PostLogoutRedirectUri: string; ClientId: number };
  ClientGrantTypes: { Id: Generated<number>; GrantType: string; ClientId: number };
  ClientCorsOrigins: { Id: Generated<number>; Origin: string; ClientId: number };
  ClientClaims: { Id: Generated<number>; Type: string; Value: string; ClientId: number };
  /** EF Core's key ring store (PersistKeysToDbContext): each row one key or revocation element as XmlKeyManager wrote it. */
  DataProtectionKeys: {
    Id: Generated<number>;
    FriendlyName: string | null;
    Xml: string | null;
  };
  PersistedGrants: {
    Id: Generated<number>;
    Key: string | null;
    Type: string;
    SubjectId: string | null;
    SessionId: string | null;
    ClientId: string;
    Description: string | null;
    CreationTime: Date;
    Expiration: Date | null;
    ConsumedTime: Date | null;
    Data: string;
  };
  /** Duende's signing keys (EntityFramework.Storage Entities/Key.cs): `Use` "signing", `Data` a serialized key container. */
  Keys: {
    Id: string;
    Version: number;
    Created: Date;
    Use: string | null;
    Algorithm: string;
    IsX509Certificate: boolean;
    DataProtected: boolean;
    Data: string;
  };
  SamlProviderConfigurations: {
    Id: string;
    Name: string;
    EntityId: string;
    SingleSignOnUrl: string;
    SigningCertificate: string | null;
    AllowedDomains: string | null;
    Enabled: boolean;
  };
  OidcProviderConfigurations: {
    Id: string;
    Name: string;
    Authority: string;
    ClientId: string;
    ClientSecret: string | null;
    Scopes: string | null;
    AllowedDomains: string | null;
    Enabled: boolean;
  };
}
