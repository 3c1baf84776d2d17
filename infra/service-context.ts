import { createConfigAppProvider, createStoreAppProvider, type AppProvider } from '../activities/provisioning/apps';
import { createTccClient, type TccClient, type TccClientOptions } from '../activities/provisioning/tcc-client';
import type { AppConfig } from '../config/schema';
import { parseAllowList } from '../net/callback-address';
import { createDb, migrateToLatest, type Db } from '../store/database';

export interface ServiceContext {
  db: Db;
  http: TccClient;
  apps: AppProvider;
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
  return {
    db,
    http,
    apps,
    async close() {
      http.close();
      await db.destroy();
    },
  };
}
