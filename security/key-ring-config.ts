import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AppConfig } from '../config/schema';
import { createKeyRing, LEGACY_KEY_ID, type KeyRing } from './data-protection';

/** The ring configured in DataProtection:Keys, then DataProtection:Key; undefined when neither is set. */
export function keyRingFromConfig(config: AppConfig): KeyRing | undefined {
  const entries = (config.DataProtection.Keys ?? []).map((k) => ({ id: k.Id, key: Buffer.from(k.Key, 'base64') }));
  const { Key } = config.DataProtection;
  if (Key && !entries.some((e) => e.id === LEGACY_KEY_ID))
    entries.push({ id: LEGACY_KEY_ID, key: Buffer.from(Key, 'base64') });
  return entries.length > 0 ? createKeyRing(entries) : undefined;
}

export const KEY_FILE = 'data-protection-keys.json';

/**
 * The embedded default's key: generated once into the data folder next to the embedded database whose secrets it
 * protects, readable by this user only. Returns the configuration with that key in DataProtection:Keys.
 */
export function withEmbeddedKey(config: AppConfig, dataDir: string, log: (line: string) => void): AppConfig {
  const file = join(dataDir, KEY_FILE);
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true });
    const keys = [{ Id: `embedded-${new Date().toISOString().slice(0, 10)}`, Key: randomBytes(32).toString('base64') }];
    writeFileSync(file, JSON.stringify(keys, null, 2), { mode: 0o600 });
    log(
      `data-protection: generated a key into ${file}; it protects the secrets this embedded database holds (back it up with the data, or set DataProtection:Keys)`,
    );
  } else {
    chmodSync(file, 0o600);
    log(`data-protection: using the generated key in ${file}`);
  }
  const keys = JSON.parse(readFileSync(file, 'utf8')) as Array<{ Id: string; Key: string }>;
  return { ...config, DataProtection: { ...config.DataProtection, Keys: keys } };
}

export const MISSING_KEY_MESSAGE =
  'DataProtection:Keys (or DataProtection:Key) is required with an external database: it protects the secrets the service keeps at rest. ' +
  'Set DataProtection__Keys__0__Id=<id> and DataProtection__Keys__0__Key=<base64 of 32 random bytes, e.g. `openssl rand -base64 32`>';
