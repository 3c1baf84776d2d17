import { Router } from 'express';
import type { AppConfig } from '../../config/schema';
import type { Db } from '../../store/database';
import { findMarker, passProgress } from '../../store/migration-markers';
import type { AdminCheck } from '../auth/identity-admin';

/** GET /admin/migration/status: progress and report of the configured version. A refusal looks exactly like "not mapped". */
export function migrationStatusRouter({
  config,
  db,
  isAdmin,
}: {
  config: AppConfig;
  db: Db;
  isAdmin: AdminCheck;
}): Router {
  const router = Router();
  router.get('/admin/migration/status', async (req, res, next) => {
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
  });
  return router;
}
