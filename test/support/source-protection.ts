import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import { keyXml, protect } from '../../platform/security/aspnet-data-protection';
import type { HarnessOptions } from './harness';

/** The application name the test sources' IdentityServer ran under (its Data Protection discriminator). */
export const SOURCE_APPLICATION_NAME = '/srv/identity-server';
const PURPOSES = [SOURCE_APPLICATION_NAME, 'PersistentGrantSerializer'];

export interface SourceKey {
  id: string;
  masterKey: Buffer;
}

/** A Data Protection key as the source's key ring holds one: a fresh id and master key. */
export const newSourceKey = (): SourceKey => ({ id: randomUUID(), masterKey: randomBytes(64) });

/** A folder holding the key as `key-{id}.xml`, as the source's file key ring does (Migration:SourceDataProtection:KeyRingPath). */
export function keyRingFolder(key: SourceKey): string {
  const folder = mkdtempSync(join(tmpdir(), 'source-key-ring-'));
  const day = 86_400_000;
  writeFileSync(
    join(folder, `key-${key.id}.xml`),
    keyXml({ ...key, created: new Date(Date.now() - day), expires: new Date(Date.now() + 80 * day) }),
  );
  return folder;
}

/** PersistedGrants.Data as Duende's PersistentGrantSerializer writes it: an envelope around a protected payload. */
export const protectedGrantData = (json: string, key: SourceKey, purposes: readonly string[] = PURPOSES) =>
  JSON.stringify({
    PersistentGrantDataContainerVersion: 1,
    DataProtected: true,
    Payload: protect(key, purposes, Buffer.from(json)).toString('base64url'),
  });

/**
 * A harness that migrates from `sourceUrl`, its provider reloading at every request, with the source's Data
 * Protection settings and any other Migration settings given.
 */
export const harnessOverProtectedSource = (
  sourceUrl: string,
  keyRingPath: string,
  migration: Record<string, unknown> = {},
): HarnessOptions => ({
  apps: {},
  migrationSource: sourceUrl,
  config: {
    Oidc: { ReloadSeconds: 0 },
    Migration: {
      SourceDataProtection: { ApplicationName: SOURCE_APPLICATION_NAME, KeyRingPath: keyRingPath },
      ...migration,
    },
  },
});

/** When a serialized grant was made and for how long, as both RefreshToken versions write it. */
export const grantLifetime = () => ({
  CreationTime: new Date().toISOString(),
  Lifetime: 2_592_000,
  ConsumedTime: null,
});
