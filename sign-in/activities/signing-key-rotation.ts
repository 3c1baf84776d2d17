import { log } from '@temporalio/activity';
import type { KeyRing } from '../../platform/security/data-protection';
import { nextRotationAt } from '../../platform/security/signing-key-timeline';
import type { Db } from '../../platform/store/database';
import { rotateSigningKeys, type KeyManagementSettings } from '../../platform/store/signing-keys';

export interface SigningKeyRotationDependencies {
  db: Db;
  /** The ring keys are sealed with: a worker without it cannot store a new key. */
  dataProtection?: KeyRing;
  /** KeyManagement as this worker is configured (every instance of a cluster is configured alike). */
  keyManagement: KeyManagementSettings;
}

/** How long to wait when there is nothing to wait for (rotation off, static keys only, no key ring): a day. */
const IDLE_MS = 24 * 3600_000;

export type RotationStep = { created?: string; deleted: string[]; nextInMs: number };

export function createSigningKeyRotationActivities({
  db,
  dataProtection,
  keyManagement,
}: SigningKeyRotationDependencies) {
  return {
    /**
     * One rotation step (platform/store/signing-keys.ts rotateSigningKeys: retired keys deleted, a new RSA key made
     * when one is due, under the store's lock), and how long until the next one has work. Only key ids are logged.
     */
    async rotateSigningKeys(): Promise<RotationStep> {
      if (!keyManagement.Enabled) return { deleted: [], nextInMs: IDLE_MS };
      if (!dataProtection) {
        log.error('Signing keys are not rotated: this worker has no DataProtection:Keys to seal a new key with');
        return { deleted: [], nextInMs: IDLE_MS };
      }
      const now = new Date();
      const outcome = await rotateSigningKeys(db, dataProtection, keyManagement, now);
      if (outcome.created)
        log.info('Made a new signing key; it is announced before it signs', { kid: outcome.created });
      if (outcome.deleted.length > 0) log.info('Deleted retired signing keys', { kids: outcome.deleted });
      const next = nextRotationAt(outcome.keys, now, keyManagement);
      return {
        created: outcome.created,
        deleted: outcome.deleted,
        nextInMs: next === undefined ? IDLE_MS : next.getTime() - now.getTime(),
      };
    },
  };
}

export type SigningKeyRotationActivities = ReturnType<typeof createSigningKeyRotationActivities>;
