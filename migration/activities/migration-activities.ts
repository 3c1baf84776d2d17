import type { KeyRing } from '../../platform/security/data-protection';
import type { Kysely } from 'kysely';
import type { SourceDatabase } from '../source/source-schema';
import type { SourceDataProtectionSettings } from '../source/data-protection-keys';
import { anyUserCreatedBy } from '../store/migrated-users';
import type { Db } from '../../platform/store/database';
import { writeFinishedMarker } from '../store/migration-markers';
import type { MigrationOptions, PageResult, UserPartition } from './types';
import { runPassPage, type PassPageInput } from './pass-page';
import { preflight, type Preflight } from './preflight';
import { beginRun, keepSourceKeyRingOf, planUserPartitions } from './run-steps';
import { validateSource, type SourceValidation } from './validation';

export interface MigrationDependencies {
  target: Db;
  /** Absent on a worker that has no Source:ConnectionString: its migration activities fail with a clear message. */
  source?: Kysely<SourceDatabase>;
  dataProtection?: KeyRing;
  sourceDataProtection?: SourceDataProtectionSettings;
  sourceSigningKeys?: { KeyPath?: string };
}

export function createMigrationActivities({
  target,
  source,
  dataProtection,
  sourceDataProtection,
  sourceSigningKeys,
}: MigrationDependencies) {
  function requireSource(): Kysely<SourceDatabase> {
    if (!source) throw new Error('this worker has no Migration:Source:ConnectionString, so it cannot read the source');
    return source;
  }

  return {
    async beginRun(options: MigrationOptions): Promise<{ proceed: boolean; reason?: string }> {
      const begun = await beginRun(target, options);
      if (begun.proceed && !options.dryRun && source && dataProtection)
        await keepSourceKeyRingOf(source, target, dataProtection, sourceDataProtection ?? {});
      return begun;
    },

    async validateSource(): Promise<SourceValidation> {
      return validateSource(requireSource());
    },

    async preflight(options: MigrationOptions): Promise<Preflight> {
      return preflight(requireSource(), options, dataProtection !== undefined);
    },

    async planUserPartitions(input: { partitions: number; pageSize: number }): Promise<UserPartition[]> {
      return planUserPartitions(requireSource(), input);
    },

    async anyUserCreatedBy(input: { version: string }): Promise<boolean> {
      return anyUserCreatedBy(target, input.version);
    },

    async runPassPage(input: PassPageInput): Promise<PageResult> {
      return runPassPage(
        { source: requireSource(), target, dataProtection, sourceDataProtection, sourceSigningKeys },
        input,
      );
    },

    async finishRun(input: {
      version: string;
      state: 'Completed' | 'Failed';
      report: Record<string, unknown>;
    }): Promise<void> {
      await writeFinishedMarker(target, input.version, input.state, input.report);
    },
  };
}

export type MigrationActivities = ReturnType<typeof createMigrationActivities>;
