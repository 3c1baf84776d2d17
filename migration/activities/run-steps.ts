import type { Kysely } from 'kysely';
import type { SourceDatabase } from '../source/source-schema';
import { countUsers, userIdAt } from '../source/user-reads';
import type { Db } from '../../platform/store/database';
import { findMarker, writeStartedMarker } from '../store/migration-markers';
import type { MigrationOptions, UserPartition } from './types';
import type { KeyRing } from '../../platform/security/data-protection';
import { logger } from '../../platform/observability/logger';
import { keepSourceKeyRing } from '../../platform/store/source-key-ring';
import { readSourceKeyRingDocuments, type SourceDataProtectionSettings } from '../source/data-protection-keys';

/** Only a Completed marker of a real run blocks a run of the same version. */
export async function beginRun(target: Db, options: MigrationOptions): Promise<{ proceed: boolean; reason?: string }> {
  const marker = await findMarker(target, options.version);
  if (marker?.state === 'Completed' && !marker.dry_run) {
    return {
      proceed: false,
      reason: `version ${options.version} completed on ${marker.finished_at?.toISOString()}; change Migration:Version for a delta sweep`,
    };
  }
  await writeStartedMarker(target, options.version, options.dryRun);
  return { proceed: true };
}

/**
 * Splits the source users into up to `partitions` key ranges of about equal size, so the user-keyed passes can page
 * through them side by side. Fewer when the source is small: a partition is worth at least a page.
 */
export async function planUserPartitions(
  source: Kysely<SourceDatabase>,
  input: { partitions: number; pageSize: number },
): Promise<UserPartition[]> {
  const users = await countUsers(source);
  const count = Math.min(input.partitions, Math.ceil(users / input.pageSize));
  const bounds: Array<string | null> = [null];
  for (let i = 1; i < count; i++) {
    const id = await userIdAt(source, Math.floor((i * users) / count) - 1);
    if (id !== undefined) bounds.push(id);
  }
  return bounds.map((after, i) => ({ after, until: bounds[i + 1] ?? null }));
}

/**
 * The source's Data Protection key ring, kept sealed in the store at the start of every real run (a delta sweep adds
 * the keys the source made since): sign-in opens the source's session cookies with it after the source is gone
 * (Migration:SourceSessions). A ring that cannot be read is logged; the run goes on (its passes say what that costs).
 */
export async function keepSourceKeyRingOf(
  source: Kysely<SourceDatabase>,
  target: Db,
  ring: KeyRing,
  settings: SourceDataProtectionSettings,
): Promise<void> {
  try {
    const read = await readSourceKeyRingDocuments(source, settings);
    if (!read) return;
    await keepSourceKeyRing(target, ring, read.documents);
    logger.info(`migration: kept the source's Data Protection key ring (${read.from}), sealed`);
  } catch (error) {
    logger.warn(`migration: the source's Data Protection key ring was not kept: ${(error as Error).message}`);
  }
}
