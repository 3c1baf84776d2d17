import type { Client } from '@temporalio/client';
import type { AppConfig } from '../../platform/config/config-schema';
import type { Db } from '../../platform/store/database';
import { findMarker } from '../store/migration-markers';
import { migrationOptions, startOrAttachMigration, waitForMigration } from './control';
import { logger } from '../../platform/observability/logger';

export interface HostedRunner {
  stop(): void;
  /** Resolves when the runner has finished (skipped, completed, failed or given up waiting). */
  done: Promise<void>;
}

/**
 * The hosted migration runner: waits StartupDelaySeconds (start-up is never blocked), skips a version that
 * already completed, starts or attaches to `migration-{Version}` and waits up to LeaseWaitMinutes for it.
 */
export function startHostedMigrationRunner(
  config: AppConfig,
  client: Client,
  db: Db,
  log: (line: string) => void = (line) => logger.info(line),
): HostedRunner {
  const m = config.Migration;
  if (!m.Enabled) return { stop() {}, done: Promise.resolve() };
  if (!m.MapStatusEndpoint)
    log(
      'migration: warning: Migration:MapStatusEndpoint is false, so GET /admin/migration/status answers 404; map it to follow the run',
    );
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const done = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      run()
        .catch((error) => log(`migration: the hosted runner failed: ${(error as Error).message}`))
        .finally(resolve);
    }, m.StartupDelaySeconds * 1000);
    timer.unref();
  });

  async function run(): Promise<void> {
    if (stopped) return;
    const marker = await findMarker(db, m.Version);
    if (marker?.state === 'Completed' && !marker.dry_run) {
      log(`migration: version ${m.Version} already completed; change Migration:Version for a delta sweep`);
      return;
    }
    const options = migrationOptions(config);
    const handle = await startOrAttachMigration(client, config, options);
    log(`migration: run ${handle.workflowId} (${options.dryRun ? 'dry run' : options.usersMode}) started or joined`);
    const report = await waitForMigration(handle, m.LeaseWaitMinutes * 60_000);
    if (!report)
      log(
        `migration: ${handle.workflowId} still running after ${m.LeaseWaitMinutes} min; it carries on, see /admin/migration/status`,
      );
    else log(`migration: ${handle.workflowId} ${report.state}${report.error ? `: ${report.error}` : ''}`);
  }

  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
    done,
  };
}
