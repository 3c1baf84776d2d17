import type { Kysely } from 'kysely';
import type { SourceDatabase } from '../source/source-schema';
import { SCOPE_COLUMNS } from '../source/configuration-reads';
import { readSourceColumns } from '../source/inventory';
import { readDuplicateEmails, SIGN_IN_STATE_COLUMNS } from '../source/user-reads';

/** The tables and columns the migration reads, by EF Core's names. */
export const EXPECTED_INVENTORY: Record<string, string[]> = {
  AspNetUsers: [
    'Id',
    'UserName',
    'NormalizedUserName',
    'Email',
    'NormalizedEmail',
    'PasswordHash',
    ...SIGN_IN_STATE_COLUMNS,
  ],
  AspNetUserClaims: ['Id', 'UserId', 'ClaimType', 'ClaimValue'],
  AspNetUserLogins: ['LoginProvider', 'ProviderKey', 'ProviderDisplayName', 'UserId'],
  AspNetRoles: ['Id', 'Name', 'NormalizedName'],
  AspNetUserRoles: ['UserId', 'RoleId'],
  AspNetUserTokens: ['UserId', 'LoginProvider', 'Name', 'Value'],
  ApiScopes: [...SCOPE_COLUMNS],
  ApiScopeClaims: ['ScopeId', 'Type'],
  IdentityResources: [...SCOPE_COLUMNS],
  IdentityResourceClaims: ['IdentityResourceId', 'Type'],
  ApiResources: ['Id', 'Enabled', 'Name', 'DisplayName'],
  ApiResourceClaims: ['ApiResourceId', 'Type'],
  ApiResourceScopes: ['ApiResourceId', 'Scope'],
  ApiResourceSecrets: ['ApiResourceId', 'Value', 'Expiration'],
  Clients: ['Id', 'Enabled', 'ClientId', 'ClientName'],
  ClientSecrets: ['ClientId', 'Value', 'Description', 'Expiration'],
  ClientScopes: ['ClientId', 'Scope'],
  ClientRedirectUris: ['ClientId', 'RedirectUri'],
  ClientPostLogoutRedirectUris: ['ClientId', 'PostLogoutRedirectUri'],
  ClientGrantTypes: ['ClientId', 'GrantType'],
  ClientCorsOrigins: ['ClientId', 'Origin'],
  ClientClaims: ['ClientId', 'Type', 'Value'],
  // `Id` only since Duende IdentityServer 6.1; before it `Key` was the primary key, and both shapes are read.
  PersistedGrants: ['Key', 'Type', 'SubjectId', 'ClientId', 'CreationTime', 'Expiration', 'ConsumedTime', 'Data'],
  // Duende's operational store since version 5; absent from IdentityServer4 and from sources that keep keys in files.
  Keys: ['Id', 'Version', 'Created', 'Use', 'Algorithm', 'IsX509Certificate', 'DataProtected', 'Data'],
  SamlProviderConfigurations: ['Id', 'Name', 'EntityId', 'SingleSignOnUrl', 'AllowedDomains', 'Enabled'],
  OidcProviderConfigurations: ['Id', 'Name', 'Authority', 'ClientId', 'AllowedDomains', 'Enabled'],
};

export interface InventoryEntry {
  table: string;
  found: boolean;
  missingColumns: string[];
}

export interface SourceValidation {
  inventory: InventoryEntry[];
  duplicateEmails: Array<{ email: string; count: number }>;
  duplicateEmailCount: number;
}

/** Each table the migration reads, whether the source has it, and which of its columns it lacks. */
export function inventoryOf(found: Map<string, Set<string>>): InventoryEntry[] {
  return Object.entries(EXPECTED_INVENTORY).map(([table, expected]) => ({
    table,
    found: found.has(table),
    missingColumns: found.has(table) ? expected.filter((c) => !found.get(table)!.has(c)) : expected,
  }));
}

export async function validateSource(source: Kysely<SourceDatabase>): Promise<SourceValidation> {
  const found = await readSourceColumns(source);
  const inventory = inventoryOf(found);
  const duplicates = found.has('AspNetUsers') ? await readDuplicateEmails(source) : [];
  return {
    inventory,
    duplicateEmails: duplicates.slice(0, 100).map((d) => ({ email: d.NormalizedEmail!, count: Number(d.count) })),
    duplicateEmailCount: duplicates.length,
  };
}
