import type { MigrationDependencies } from '../migration/activities/migration-activities';
import { createConfigAppProvider, createStoreAppProvider, type AppProvider } from '../provisioning/apps/app-providers';
import { createTccClient, type TccClient, type TccClientOptions } from '../provisioning/apps/tcc-client';
import type { AppConfig } from '../platform/config/config-schema';
import { parseAllowList } from '../platform/security/callback-address';
import { createGuardedFetch, type GuardedFetch } from '../platform/security/guarded-fetch';
import type { Kysely } from 'kysely';
import { connectSource } from '../migration/source/connection';
import type { SourceDatabase } from '../migration/source/source-schema';
import { clientReads, type ClientReads } from '../platform/store/client-reads';
import { createDb, migrateToLatest, type Db } from '../platform/store/database';
import type { KeyRing } from '../platform/security/data-protection';
import { keyRingFromConfig, MISSING_KEY_MESSAGE } from '../platform/config/key-ring';
import { ConfigError } from '../platform/config/load';
import { protectStoredAppKeys } from '../provisioning/store/provisioning-apps';
import { logger } from '../platform/observability/logger';

export interface ServiceContext {
  db: Db;
  http: TccClient;
  apps: AppProvider;
  /** The migration source, when Migration:Source:ConnectionString is set. */
  source?: Kysely<SourceDatabase>;
  /** DataProtection:Keys; every process that touches a secret at rest has one (see MISSING_KEY_MESSAGE). */
  dataProtection?: KeyRing;
  /** Migration:SourceDataProtection, for the migration's refresh-token pass. */
  sourceDataProtection: AppConfig['Migration']['SourceDataProtection'];
  /** Migration:SourceSigningKeys, for the migration's signing-keys pass. */
  sourceSigningKeys: AppConfig['Migration']['SourceSigningKeys'];
  /** Requests to addresses clients registered (back-channel logout), under the same rule as app callbacks. */
  outbound: GuardedFetch;
  /** KeyManagement: which key signs (logout tokens) and how rotation runs. */
  keyManagement: AppConfig['KeyManagement'];
  /** Clients and their live secrets as the token and authorization endpoints read them (Caching:ClientStoreExpiration). */
  clients: ClientReads;
  close: () => Promise<void>;
}

/** What a caller may put in place of what configuration chooses. */
export interface ServiceContextOptions {
  http?: TccClientOptions;
  /** A custom provider (per tenant, another database, …) replaces the one chosen by Provisioning:AppProvider. */
  appProvider?: (deps: { db: Db; config: AppConfig }) => AppProvider;
}

/** The store-backed app provider keeps app keys at rest: it needs the key ring, and rows from before are sealed now. */
async function sealStoredAppKeys(db: Db, dataProtection: KeyRing | undefined): Promise<void> {
  if (!dataProtection)
    throw new ConfigError(
      `Provisioning:AppProvider = Store keeps app keys at rest, so it needs a data-protection key. ${MISSING_KEY_MESSAGE}`,
    );
  const sealed = await protectStoredAppKeys(db, dataProtection);
  if (sealed > 0)
    logger.info(
      `store: encrypted the API keys of ${sealed} provisioning apps stored before keys were protected at rest`,
    );
}

/**
 * The store (migrated to the latest schema), the downstream-app client and the app provider, the outbound fetch and
 * the migration source, built once from configuration for every part of the process.
 */
export async function createServiceContext(
  config: AppConfig,
  databaseUrl: string,
  options: ServiceContextOptions = {},
): Promise<ServiceContext> {
  const db = createDb(databaseUrl);
  await migrateToLatest(db);
  const dataProtection = keyRingFromConfig(config);
  if (config.Provisioning.AppProvider === 'Store') await sealStoredAppKeys(db, dataProtection);
  const allow = parseAllowList(config.Auth.AllowedInternalTargets);
  const http = createTccClient(allow, options.http);
  const outbound = createGuardedFetch(allow);
  const apps =
    options.appProvider?.({ db, config }) ??
    (config.Provisioning.AppProvider === 'Store'
      ? createStoreAppProvider(db, dataProtection!)
      : createConfigAppProvider(config.ProvisioningApps));
  const clients = clientReads(db, {
    expirationSeconds: config.Caching.ClientStoreExpiration,
    log: (level, line) => logger[level](line),
  });
  const source = config.Migration.Source.ConnectionString
    ? connectSource(config.Migration.Source.ConnectionString).db
    : undefined;
  return {
    db,
    http,
    apps,
    source,
    dataProtection,
    sourceDataProtection: config.Migration.SourceDataProtection,
    sourceSigningKeys: config.Migration.SourceSigningKeys,
    outbound,
    keyManagement: config.KeyManagement,
    clients,
    async close() {
      http.close();
      outbound.close();
      await clients.close();
      await source?.destroy();
      await db.destroy();
    },
  };
}

/** What the migration activities take from the service context: the target store, the source, the key ring. */
export const migrationDependencies = (context: ServiceContext): MigrationDependencies => ({
  target: context.db,
  source: context.source,
  dataProtection: context.dataProtection,
  sourceDataProtection: context.sourceDataProtection,
  sourceSigningKeys: context.sourceSigningKeys,
});
