import { sumCounts, type Counts } from './migration-counts';
import { sql } from 'kysely';
import type { Db } from '../../platform/store/database';

export async function findMarker(db: Db, version: string) {
  return db.selectFrom('migration_markers').selectAll().where('version', '=', version).executeTakeFirst();
}

/** A Started marker for this version, replacing a Failed or dry-run one (only a Completed real run blocks a re-run). */
export async function writeStartedMarker(db: Db, version: string, dryRun: boolean): Promise<void> {
  await db
    .insertInto('migration_markers')
    .values({ version, state: 'Started', dry_run: dryRun, progress: '{}', report: null, finished_at: null })
    .onConflict((oc) =>
      oc.column('version').doUpdateSet({
        state: 'Started',
        dry_run: dryRun,
        progress: '{}',
        report: null,
        finished_at: null,
        started_at: new Date(),
      }),
    )
    .execute();
}

export type PassTotals = Counts & { done: boolean };

/**
 * Rows so far of one partition of a pass, and whether it is done. Partitions of a pass and independent passes run
 * side by side, so each writes its own key; the update re-reads the row it waited for, so no write is lost.
 */
export async function recordPassProgress(
  db: Db,
  version: string,
  at: { pass: string; partition: number; partitions: number },
  totals: PassTotals,
): Promise<void> {
  const passes = sql`coalesce(progress->'passes', '{}'::jsonb)`;
  const parts = sql`coalesce(progress->'passes'->${at.pass}::text->'parts', '{}'::jsonb) || jsonb_build_object(${String(at.partition)}::text, ${JSON.stringify(totals)}::jsonb)`;
  await db
    .updateTable('migration_markers')
    .set({
      progress:
        sql`jsonb_set(progress, '{passes}', ${passes} || jsonb_build_object(${at.pass}::text, jsonb_build_object('partitions', ${at.partitions}::int, 'parts', ${parts})))` as never,
    })
    .where('version', '=', version)
    .execute();
}

/** Progress per pass, its partitions summed: what the status endpoint and the CLI show. */
export function passProgress(progress: unknown): Record<string, PassTotals> {
  const passes =
    (progress as { passes?: Record<string, { partitions: number; parts: Record<string, PassTotals> }> } | null)
      ?.passes ?? {};
  return Object.fromEntries(
    Object.entries(passes).map(([pass, { partitions, parts }]) => {
      const all = Object.values(parts);
      return [pass, { ...sumCounts(all), done: all.length === partitions && all.every((p) => p.done) }];
    }),
  );
}

export async function writeFinishedMarker(
  db: Db,
  version: string,
  state: 'Completed' | 'Failed',
  report: Record<string, unknown>,
): Promise<void> {
  await db
    .updateTable('migration_markers')
    .set({ state, report: JSON.stringify(report), finished_at: new Date() })
    .where('version', '=', version)
    .execute();
}

/** The markers of every version, the latest started first (the cutover dashboard shows each run). */
export async function listMarkers(db: Db, limit = 20) {
  return db.selectFrom('migration_markers').selectAll().orderBy('started_at', 'desc').limit(limit).execute();
}

export type MarkerRow = Awaited<ReturnType<typeof listMarkers>>[number];
