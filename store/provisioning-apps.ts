import type { Db } from './database';

export interface StoredApp {
  appId: string;
  callbackUrl: string;
  apiKey: string;
  tryTimeoutSeconds: number;
}

const COLUMNS = ['app_id', 'callback_url', 'api_key', 'try_timeout_seconds'] as const;

function toApp(row: { app_id: string; callback_url: string; api_key: string; try_timeout_seconds: number }): StoredApp {
  return { appId: row.app_id, callbackUrl: row.callback_url, apiKey: row.api_key, tryTimeoutSeconds: row.try_timeout_seconds };
}

/** In creation order, which is the order apps are tried in. */
export async function listStoredApps(db: Db): Promise<StoredApp[]> {
  return (await db.selectFrom('provisioning_apps').select(COLUMNS).orderBy('created_at').orderBy('app_id').execute()).map(toApp);
}

export async function findStoredApp(db: Db, appId: string): Promise<StoredApp | undefined> {
  const row = await db.selectFrom('provisioning_apps').select(COLUMNS).where('app_id', '=', appId).executeTakeFirst();
  return row && toApp(row);
}

/** False when an app with this id exists already. */
export async function insertStoredApp(db: Db, app: StoredApp): Promise<boolean> {
  const result = await db
    .insertInto('provisioning_apps')
    .values({ app_id: app.appId, callback_url: app.callbackUrl, api_key: app.apiKey, try_timeout_seconds: app.tryTimeoutSeconds })
    .onConflict((oc) => oc.column('app_id').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

/** False when there is no such app. */
export async function replaceStoredApp(db: Db, app: StoredApp): Promise<boolean> {
  const result = await db
    .updateTable('provisioning_apps')
    .set({ callback_url: app.callbackUrl, api_key: app.apiKey, try_timeout_seconds: app.tryTimeoutSeconds, updated_at: new Date() })
    .where('app_id', '=', app.appId)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

export async function deleteStoredApp(db: Db, appId: string): Promise<boolean> {
  const result = await db.deleteFrom('provisioning_apps').where('app_id', '=', appId).executeTakeFirst();
  return result.numDeletedRows > 0n;
}
