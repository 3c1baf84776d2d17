import { protectText, unprotectText, type KeyRing } from '../../platform/security/data-protection';
import type { Db } from '../../platform/store/database';
import { deletedAny, updatedAny } from '../../platform/store/row-counts';

/**
 * An app as the orchestrator calls it, wherever it is configured (the ProvisioningApps section or this store). The key
 * stays inside activities and this store; workflows see only an AppRef.
 */
export interface ProvisioningApp {
  appId: string;
  callbackUrl: string;
  apiKey: string;
  tryTimeoutSeconds: number;
}

/** What a workflow may know about an app: no URL, no key. */
export type AppRef = Pick<ProvisioningApp, 'appId' | 'tryTimeoutSeconds'>;

const COLUMNS = ['app_id', 'callback_url', 'api_key', 'api_key_protected', 'try_timeout_seconds'] as const;

type Row = {
  app_id: string;
  callback_url: string;
  api_key: string;
  api_key_protected: boolean;
  try_timeout_seconds: number;
};

/**
 * App keys are bearer credentials to the apps: a database dump or backup must not hold one an attacker could replay.
 * They are sealed under the data-protection key ring and opened only when an app is called.
 */
function toApp(row: Row, ring: KeyRing): ProvisioningApp {
  const apiKey = row.api_key_protected ? unprotectText(row.api_key, ring) : row.api_key;
  return { appId: row.app_id, callbackUrl: row.callback_url, apiKey, tryTimeoutSeconds: row.try_timeout_seconds };
}

const sealedKey = (app: ProvisioningApp, ring: KeyRing) => ({
  api_key: protectText(app.apiKey, ring),
  api_key_protected: true,
});

/** In creation order, which is the order apps are tried in. */
export async function listStoredApps(db: Db, ring: KeyRing): Promise<ProvisioningApp[]> {
  return (
    await db.selectFrom('provisioning_apps').select(COLUMNS).orderBy('created_at').orderBy('app_id').execute()
  ).map((row) => toApp(row, ring));
}

export async function findStoredApp(db: Db, ring: KeyRing, appId: string): Promise<ProvisioningApp | undefined> {
  const row = await db.selectFrom('provisioning_apps').select(COLUMNS).where('app_id', '=', appId).executeTakeFirst();
  return row && toApp(row, ring);
}

/** False when an app with this id exists already. */
export async function insertStoredApp(db: Db, ring: KeyRing, app: ProvisioningApp): Promise<boolean> {
  const result = await db
    .insertInto('provisioning_apps')
    .values({
      app_id: app.appId,
      callback_url: app.callbackUrl,
      ...sealedKey(app, ring),
      try_timeout_seconds: app.tryTimeoutSeconds,
    })
    .onConflict((oc) => oc.column('app_id').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0) > 0;
}

/** False when there is no such app. */
export async function replaceStoredApp(db: Db, ring: KeyRing, app: ProvisioningApp): Promise<boolean> {
  const result = await db
    .updateTable('provisioning_apps')
    .set({
      callback_url: app.callbackUrl,
      ...sealedKey(app, ring),
      try_timeout_seconds: app.tryTimeoutSeconds,
      updated_at: new Date(),
    })
    .where('app_id', '=', app.appId)
    .executeTakeFirst();
  return updatedAny(result);
}

export async function deleteStoredApp(db: Db, appId: string): Promise<boolean> {
  return deletedAny(await db.deleteFrom('provisioning_apps').where('app_id', '=', appId).executeTakeFirst());
}

/** Seals the keys of rows stored before keys were protected; returns how many it sealed. */
export async function protectStoredAppKeys(db: Db, ring: KeyRing): Promise<number> {
  const plain = await db
    .selectFrom('provisioning_apps')
    .select(['app_id', 'api_key'])
    .where('api_key_protected', '=', false)
    .execute();
  for (const row of plain) {
    await db
      .updateTable('provisioning_apps')
      .set({ api_key: protectText(row.api_key, ring), api_key_protected: true })
      .where('app_id', '=', row.app_id)
      .where('api_key_protected', '=', false)
      .execute();
  }
  return plain.length;
}
