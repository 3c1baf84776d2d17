import type { ProvisioningAppConfig } from '../../platform/config/config-schema';
import type { KeyRing } from '../../platform/security/data-protection';
import type { Db } from '../../platform/store/database';
import { findStoredApp, listStoredApps, type ProvisioningApp } from '../store/provisioning-apps';

export type { ProvisioningApp };

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
    listApps: () => Promise.resolve(list),
    getApp: (appId) => Promise.resolve(list.find((a) => a.appId === appId)),
  };
}

/** `Provisioning:AppProvider = Store`: apps managed at run time through the admin API; every attempt reads the store, so changes need no restart. */
export function createStoreAppProvider(db: Db, ring: KeyRing): AppProvider {
  return {
    listApps: () => listStoredApps(db, ring),
    getApp: (appId) => findStoredApp(db, ring, appId),
  };
}

/** The apps a provider offers as operators read them at start-up: ids and hosts, never keys. */
export async function describeApps(provider: AppProvider): Promise<string> {
  const apps = await provider.listApps({ userId: '', organizationId: null });
  if (apps.length === 0) return 'none';
  return apps
    .map((app) => `${app.appId} (${URL.canParse(app.callbackUrl) ? new URL(app.callbackUrl).host : '?'})`)
    .join(', ');
}
