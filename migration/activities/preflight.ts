import type { Kysely } from 'kysely';
import type { SourceDatabase } from '../source/source-schema';
import type { MigrationOptions, PassName } from './types';
import { anyMfaToken } from '../source/user-reads';
import { inventoryOf } from './validation';
import { readSourceColumns } from '../source/inventory';

/** The ASP.NET Identity tables: without any of them there is no user to migrate, so the run fails at once. */
export const REQUIRED_TABLES = [
  'AspNetUsers',
  'AspNetUserClaims',
  'AspNetUserLogins',
  'AspNetRoles',
  'AspNetUserRoles',
  'AspNetUserTokens',
];

/** The client and API-resource tables: required while Migration:MigrateClients is true (its default). */
const CLIENT_TABLES = [
  'Clients',
  'ClientSecrets',
  'ClientScopes',
  'ClientRedirectUris',
  'ClientPostLogoutRedirectUris',
  'ClientGrantTypes',
  'ClientCorsOrigins',
  'ClientClaims',
  'ApiResources',
  'ApiResourceClaims',
  'ApiResourceScopes',
  'ApiResourceSecrets',
];

/** What each optional pass reads; a source without one of its tables (a stock Duende database has no provider tables) skips it. */
const OPTIONAL_PASS_TABLES: Partial<Record<PassName, string[]>> = {
  scopes: ['ApiScopes', 'ApiScopeClaims', 'IdentityResources', 'IdentityResourceClaims'],
  'saml-providers': ['SamlProviderConfigurations'],
  'oidc-providers': ['OidcProviderConfigurations'],
  'refresh-tokens': ['PersistedGrants'],
};

export interface Preflight {
  /** Why the run cannot start (a required table or column is missing, a setting it needs is not there); absent when it can. */
  fatal?: string;
  /** Passes whose optional tables the source lacks, each with the warning the report carries. */
  skipped: Array<{ pass: PassName; warning: string }>;
}

/**
 * What a run needs, checked before it writes anything: an error that cannot heal (a missing table or column, a
 * missing key) fails the run within seconds instead of retrying a pass for many minutes after others have written.
 */
export async function preflight(
  source: Kysely<SourceDatabase>,
  options: MigrationOptions,
  hasDataProtection: boolean,
): Promise<Preflight> {
  const inventory = new Map(inventoryOf(await readSourceColumns(source)).map((entry) => [entry.table, entry]));
  const missing = (table: string) => {
    const { found, missingColumns } = inventory.get(table)!;
    if (!found) return `table ${table}`;
    return missingColumns.length > 0 ? `${table}.${missingColumns.join(`, ${table}.`)}` : undefined;
  };

  const required = options.migrateClients ? [...REQUIRED_TABLES, ...CLIENT_TABLES] : REQUIRED_TABLES;
  const requiredMissing = required.map(missing).filter(Boolean);
  const skipped: Preflight['skipped'] = [];
  for (const [pass, tables] of Object.entries(OPTIONAL_PASS_TABLES) as Array<[PassName, string[]]>) {
    const gaps = tables.map(missing).filter(Boolean);
    if (gaps.length > 0)
      skipped.push({ pass, warning: `the source has no ${gaps.join(', ')}; the ${pass} pass was skipped` });
  }
  if (requiredMissing.length > 0) {
    return {
      fatal: `the source lacks ${requiredMissing.join(', ')}, which the migration needs${options.migrateClients ? ' (set Migration:MigrateClients to false if it has no clients)' : ''}`,
      skipped,
    };
  }
  if (!hasDataProtection && !options.dryRun) {
    if (await anyMfaToken(source))
      return {
        fatal:
          'the source holds MFA credentials, and protecting them needs DataProtection:Keys (or DataProtection:Key), which this worker does not have',
        skipped,
      };
  }
  return { skipped };
}
