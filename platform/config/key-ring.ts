import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ConfigError } from './load';
import type { AppConfig } from './config-schema';
import { createKeyRing, LEGACY_KEY_ID, type KeyRing } from '../security/data-protection';

/** The ring configured in DataProtection:Keys, then DataProtection:Key; undefined when neither is set. */
export function keyRingFromConfig(config: AppConfig): KeyRing | undefined {
  const entries = (config.DataProtection.Keys ?? []).map((k) => ({ id: k.Id, key: Buffer.from(k.Key, 'base64') }));
  const { Key } = config.DataProtection;
  if (Key && !entries.some((e) => e.id === LEGACY_KEY_ID))
    entries.push({ id: LEGACY_KEY_ID, key: Buffer.from(Key, 'base64') });
  return entries.length > 0 ? createKeyRing(entries) : undefined;
}

/** The data-protection ring, or a configuration error saying how to set one (after `why`, when given). */
export function requireKeyRing(config: AppConfig, why?: string): KeyRing {
  const ring = keyRingFromConfig(config);
  if (!ring) throw new ConfigError(why ? `${why}: ${MISSING_KEY_MESSAGE}` : MISSING_KEY_MESSAGE);
  return ring;
}

export const KEY_FILE = 'data-protection-keys.json';
export const PAYLOAD_KEY_FILE = 'temporal-payload-keys.json';

/** The ring of Temporal:PayloadKeys; undefined when none is set. */
export function payloadKeyRingFromConfig(config: AppConfig): KeyRing | undefined {
  const entries = (config.Temporal.PayloadKeys ?? []).map((k) => ({ id: k.Id, key: Buffer.from(k.Key, 'base64') }));
  return entries.length > 0 ? createKeyRing(entries, 'payload key') : undefined;
}

/** The payload ring, or a configuration error saying how to set one. */
export function requirePayloadKeyRing(config: AppConfig): KeyRing {
  const ring = payloadKeyRingFromConfig(config);
  if (!ring) throw new ConfigError(MISSING_PAYLOAD_KEY_MESSAGE);
  return ring;
}

/** A key generated once into `file`, readable by this user only, and logged the first time and every later time. */
function embeddedKeys(file: string, generated: string, reused: string, log: (line: string) => void) {
  if (!existsSync(file)) {
    mkdirSync(dirname(file), { recursive: true });
    const keys = [{ Id: `embedded-${new Date().toISOString().slice(0, 10)}`, Key: randomBytes(32).toString('base64') }];
    writeFileSync(file, JSON.stringify(keys, null, 2), { mode: 0o600 });
    log(generated);
  } else {
    chmodSync(file, 0o600);
    log(reused);
  }
  return JSON.parse(readFileSync(file, 'utf8')) as Array<{ Id: string; Key: string }>;
}

/**
 * The embedded default's key: generated once into the data folder next to the embedded database whose secrets it
 * protects. Returns the configuration with that key in DataProtection:Keys.
 */
export function withEmbeddedKey(config: AppConfig, dataDir: string, log: (line: string) => void): AppConfig {
  const file = join(dataDir, KEY_FILE);
  const keys = embeddedKeys(
    file,
    `data-protection: generated a key into ${file}; it protects the secrets this embedded database holds (back it up with the data, or set DataProtection:Keys)`,
    `data-protection: using the generated key in ${file}`,
    log,
  );
  return { ...config, DataProtection: { ...config.DataProtection, Keys: keys } };
}

/**
 * The embedded Temporal's payload key, generated once next to its history file: histories written under it can be read
 * only with it. Returns the configuration with that key in Temporal:PayloadKeys.
 */
export function withEmbeddedPayloadKey(config: AppConfig, dataDir: string, log: (line: string) => void): AppConfig {
  const file = join(dataDir, PAYLOAD_KEY_FILE);
  const keys = embeddedKeys(
    file,
    `temporal: generated a payload key into ${file}; every workflow history is sealed with it (back it up with the data, or set Temporal:PayloadKeys)`,
    `temporal: sealing workflow payloads with the generated key in ${file}`,
    log,
  );
  return { ...config, Temporal: { ...config.Temporal, PayloadKeys: keys } };
}

export const MISSING_PAYLOAD_KEY_MESSAGE =
  'Temporal:PayloadKeys is required with Temporal:Address (TEMPORAL_ADDRESS): every workflow payload is sealed with it, so the Temporal cluster sees ciphertext only. ' +
  'Set Temporal__PayloadKeys__0__Id=<id> and Temporal__PayloadKeys__0__Key=<base64 of 32 random bytes, e.g. `openssl rand -base64 32`>, the same in the API, the worker and the migration CLI';

export const MISSING_KEY_MESSAGE =
  'DataProtection:Keys (or DataProtection:Key) is required with an external database: it protects the secrets the service keeps at rest. ' +
  'Set DataProtection__Keys__0__Id=<id> and DataProtection__Keys__0__Key=<base64 of 32 random bytes, e.g. `openssl rand -base64 32`>';
