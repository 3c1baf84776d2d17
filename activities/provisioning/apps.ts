import type { ProvisioningAppConfig } from '../../config/schema';

/** An app as the orchestrator calls it. The key stays inside activities; workflows see only ids and timeouts. */
export interface ProvisioningApp {
  appId: string;
  callbackUrl: string;
  apiKey: string;
  tryTimeoutSeconds: number;
}

/** Replaceable source of apps (configuration, store, per tenant); the orchestrator only needs the list. */
export interface AppProvider {
  listApps(): Promise<ProvisioningApp[]>;
}

export function createConfigAppProvider(apps: Record<string, ProvisioningAppConfig>): AppProvider {
  const list = Object.entries(apps).map(([appId, app]) => ({
    appId,
    callbackUrl: app.CallbackUrl,
    apiKey: app.ApiKey,
    tryTimeoutSeconds: app.TryTimeoutSeconds,
  }));
  return { listApps: async () => list };
}
