import type { Operations } from '../../platform/http/operations';
import type { AppConfig } from '../../platform/config/config-schema';
import type { Db } from '../../platform/store/database';
import { findMarker, passProgress } from '../store/migration-markers';
import type { AdminCheck } from '../../platform/http/identity-admin';

/** GET /admin/migration/status: progress and report of the configured version. A refusal looks exactly like "not mapped". */
export function migrationStatusOperations({
  config,
  db,
  isAdmin,
}: {
  config: AppConfig;
  db: Db;
  isAdmin: AdminCheck;
}): Operations {
  return {
    getMigrationStatus: async (req, res, next) => {
      if ((await isAdmin(req)) !== 'admin') return next();
      const version = config.Migration.Version;
      const marker = await findMarker(db, version);
      if (!marker) return res.json({ version, state: 'NotStarted', enabled: config.Migration.Enabled });
      const passes = passProgress(marker.progress);
      res.json({
        version,
        state: marker.state,
        runningPasses: marker.state === 'Started' ? Object.keys(passes).filter((p) => !passes[p].done) : [],
        dryRun: marker.dry_run,
        startedAt: marker.started_at,
        finishedAt: marker.finished_at,
        progress: { passes },
        report: marker.report,
      });
    },
  };
}
