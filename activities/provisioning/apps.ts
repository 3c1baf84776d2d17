import type { ProvisioningAppConfig } from '../../config/schema';
import type { Db } from '../../store/database';
import { findStoredApp, listStoredApps } from '../../store/provisioning-apps';

/** An app as the orchestrator calls it. The key stays inside activities; workflows see only ids and timeouts. */
export interface ProvisioningApp {
  appId: string;
  callbackUrl: string;
  apiKey: string;
  tryTimeoutSeconds: number;
}

/** Who an attempt is for, so a provider can choose apps per user or per organization (tenant). */
export interface AppScope {
  userId: string;
  organizationId: string | null;
}

/**
 * The replaceable source of provisioning apps. The orchestrator asks which apps a user's attempt may
 * provision into (in the order they are tried) and looks an app up again by id for Confirm, Cancel and DELETE.
 */
export interface AppProvider {
  listApps(scope: AppScope): Promise<ProvisioningApp[]>;
  getApp(appId: string): Promise<ProvisioningApp | undefined>;
}

/** The default: the `ProvisioningApps` configuration section, in the order it lists them. */
export function createConfigAppProvider(apps: Record<string, ProvisioningAppConfig>): AppProvider {
  const list = Object.entries(apps).map(([appId, app]) => ({
    appId,
    callbackUrl: app.CallbackUrl,
    apiKey: app.ApiKey,
    tryTimeoutSeconds: app.TryTimeoutSeconds,
  }));
  return {
    listApps: async () => list,
    getApp: async (appId) => list.find((a) => a.appId === appId),
  };
}

/** `Provisioning:AppProvider = Store`: apps managed at run time through the admin API; every attempt reads the store, so changes need no restart. */
export function createStoreAppProvider(db: Db): AppProvider {
  return {
    listApps: () => listStoredApps(db),
    getApp: (appId) => findStoredApp(db, appId),
  };
}
