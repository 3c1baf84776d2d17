import { sql, type Kysely } from 'kysely';
import type { SourceDatabase } from '../../migration-source/schema';

/** The columns ApiScopes and IdentityResources share, which the scopes pass reads from both. */
export const SCOPE_COLUMNS = [
  'Id',
  'Enabled',
  'Name',
  'DisplayName',
  'Description',
  'Required',
  'Emphasize',
  'ShowInDiscoveryDocument',
] as const;

/** ASP.NET Identity's sign-in state, which the users pass carries over. */
export const SIGN_IN_STATE_COLUMNS = ['EmailConfirmed', 'TwoFactorEnabled', 'LockoutEnd', 'AccessFailedCount'] as const;

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

/**
 * The source's tables and their columns. Works on SQL Server and PostgreSQL alike: INFORMATION_SCHEMA, with the
 * column names aliased to one spelling.
 */
export async function readSourceColumns(source: Kysely<SourceDatabase>): Promise<Map<string, Set<string>>> {
  const columns = await sql<{
    table_name: string;
    column_name: string;
  }>`select TABLE_NAME as table_name, COLUMN_NAME as column_name from INFORMATION_SCHEMA.COLUMNS`.execute(source);
  const found = new Map<string, Set<string>>();
  for (const c of columns.rows) {
    if (!found.has(c.table_name)) found.set(c.table_name, new Set());
    found.get(c.table_name)!.add(c.column_name);
  }
  return found;
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
  const duplicates = found.has('AspNetUsers')
    ? await source
        .selectFrom('AspNetUsers')
        .select((eb) => ['NormalizedEmail', eb.fn.countAll<number>().as('count')])
        .where('NormalizedEmail', 'is not', null)
        .groupBy('NormalizedEmail')
        .having((eb) => eb.fn.countAll(), '>', 1)
        .orderBy('NormalizedEmail')
        .execute()
    : [];
  return {
    inventory,
    duplicateEmails: duplicates.slice(0, 100).map((d) => ({ email: d.NormalizedEmail!, count: Number(d.count) })),
    duplicateEmailCount: duplicates.length,
  };
}
