import type { MigrationOptions } from '../../migration/activities/types';
import { migrationOptions, startOrAttachMigration } from '../../migration/runner/control';
import type { MigrationReport, PassReport } from '../../migration/workflows/migration';
import type { Harness } from './harness';

/** A migration run of the harness's source into its store, with these options over the configuration's; its report. */
export async function runMigration(h: Harness, overrides: Partial<MigrationOptions> = {}): Promise<MigrationReport> {
  const handle = await startOrAttachMigration(h.client, h.config, migrationOptions(h.config, overrides));
  return handle.result();
}

/** As runMigration, and the run must complete. */
export async function migrateCompletely(
  h: Harness,
  overrides: Partial<MigrationOptions> = {},
): Promise<MigrationReport> {
  const report = await runMigration(h, overrides);
  expect(report.state).toBe('Completed');
  return report;
}

/** One pass's part of a report. */
export const passOf = (report: MigrationReport, name: string): PassReport =>
  report.passes.find((p) => p.pass === name)!;
