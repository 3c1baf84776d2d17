import { sql } from 'kysely';
import type { Db } from './database';

export async function findMarker(db: Db, version: string) {
  return db.selectFrom('migration_markers').selectAll().where('version', '=', version).executeTakeFirst();
}

export async function latestMarker(db: Db) {
  return db.selectFrom('migration_markers').selectAll().orderBy('started_at', 'desc').limit(1).executeTakeFirst();
}

/** A Started marker for this version, replacing a Failed or dry-run one (only a Completed real run blocks a re-run). */
export async function writeStartedMarker(db: Db, version: string, dryRun: boolean): Promise<void> {
  await db
    .insertInto('migration_markers')
    .values({ version, state: 'Started', dry_run: dryRun, progress: '{}', report: null, finished_at: null })
    .onConflict((oc) =>
      oc.column('version').doUpdateSet({ state: 'Started', dry_run: dryRun, progress: '{}', report: null, finished_at: null, started_at: new Date() }),
    )
    .execute();
}

/** Rows so far per pass, and whether the pass is done; passes run side by side, so several can be under way. */
export async function recordPassProgress(db: Db, version: string, pass: string, totals: Record<string, number>, done: boolean): Promise<void> {
  await db
    .updateTable('migration_markers')
    .set({ progress: sql`jsonb_set(jsonb_set(progress, '{passes}', coalesce(progress->'passes', '{}'::jsonb)), ${sql.lit(`{passes,${pass}}`)}::text[], ${JSON.stringify({ ...totals, done })}::jsonb)` as never })
    .where('version', '=', version)
    .execute();
}

export async function writeFinishedMarker(db: Db, version: string, state: 'Completed' | 'Failed', report: Record<string, unknown>): Promise<void> {
  await db.updateTable('migration_markers').set({ state, report: JSON.stringify(report), finished_at: new Date() }).where('version', '=', version).execute();
}
