import { createConfigAppProvider, createStoreAppProvider, type AppProvider } from '../activities/provisioning/apps';
import { createTccClient, type TccClient, type TccClientOptions } from '../activities/provisioning/tcc-client';
import type { AppConfig } from '../config/schema';
import { parseAllowList } from '../net/callback-address';
import type { Kysely } from 'kysely';
import { connectSource } from '../source/connection';
import type { SourceDatabase } from '../source/schema';
import { createDb, migrateToLatest, type Db } from '../store/database';

export interface ServiceContext {
  db: Db;
  http: TccClient;
  apps: AppProvider;
  /** The migration source, when Migration:Source:ConnectionString is set. */
  source?: Kysely<SourceDatabase>;
  dataProtectionKey?: Buffer;
  close(): Promise<void>;
}

/** The store (migrated to the latest schema), the downstream-app client and the app provider, built once from configuration. */
export interface ServiceContextOptions {
  http?: TccClientOptions;
  /** A custom provider (per tenant, another database, …) replaces the one chosen by Provisioning:AppProvider. */
  appProvider?: (deps: { db: Db; config: AppConfig }) => AppProvider;
}

export async function createServiceContext(config: AppConfig, databaseUrl: string, options: ServiceContextOptions = {}): Promise<ServiceContext> {
  const db = createDb(databaseUrl);
  await migrateToLatest(db);
  const http = createTccClient(parseAllowList(config.Auth.AllowedInternalTargets), options.http);
  const apps =
    options.appProvider?.({ db, config }) ?? (config.Provisioning.AppProvider === 'Store' ? createStoreAppProvider(db) : createConfigAppProvider(config.ProvisioningApps));
  const source = config.Migration.Source.ConnectionString ? connectSource(config.Migration.Source.ConnectionString).db : undefined;
  return {
    db,
    http,
    apps,
    source,
    dataProtectionKey: config.DataProtection.Key ? Buffer.from(config.DataProtection.Key, 'base64') : undefined,
    async close() {
      http.close();
      await source?.destroy();
      await db.destroy();
    },
  };
}
