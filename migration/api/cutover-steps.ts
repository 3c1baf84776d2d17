import type { AppConfig } from '../../platform/config/config-schema';
import type { MarkerRow } from '../store/migration-markers';
import type { ReadThroughTally } from '../store/read-through-tallies';

export type StepState = 'done' | 'running' | 'todo' | 'check' | 'failed';

/** One step of docs/migration.md's cutover, with what the store and the configuration say of it now. */
export interface CutoverStep {
  title: string;
  state: StepState;
  why: string;
}

export interface CutoverFacts {
  migration: AppConfig['Migration'];
  /** Every version's marker, the latest first. */
  markers: MarkerRow[];
  tallies: ReadThroughTally[];
  /** Signing keys by origin: `static` (imported with `import-signing-key`) and `migrated` come from the source. */
  signingKeys: Record<string, number>;
  now: Date;
}

/** The refresh-token tally a run's refresh-tokens pass reported, if it did. */
export function refreshTokenTally(
  marker: MarkerRow,
): { carriedOver: number; notCarried: Record<string, number> } | undefined {
  const passes = (marker.report as { passes?: Array<{ pass?: string; refreshTokens?: unknown }> } | null)?.passes;
  const tally = passes?.find((p) => p.pass === 'refresh-tokens')?.refreshTokens;
  return tally && typeof tally === 'object'
    ? (tally as { carriedOver: number; notCarried: Record<string, number> })
    : undefined;
}

/**
 * Reasons a token is rightly left behind (it would not work at the source either, or belongs to no user); any other
 * reason (the ring, the application name, the key or the payload) is one to look at before cutover (docs/migration.md
 * step 4).
 */
const LEFT_BEHIND_RIGHTLY = /^(expired|consumed|no subject)/;

const at = (date: Date | null | undefined) => (date ? date.toISOString().replace('T', ' ').slice(0, 16) + ' UTC' : '');

/** Steps 2 and 3: the dry run, then the real run, by the markers of either kind. */
function runStep(facts: CutoverFacts, dryRun: boolean): CutoverStep {
  const title = dryRun
    ? 'Dry run (Enabled and DryRun true) and read the report'
    : 'Real run (DryRun false), then spot-check sign-ins with migrated accounts';
  const runs = facts.markers.filter((m) => m.dry_run === dryRun);
  const completed = runs.find((m) => m.state === 'Completed');
  const latest = runs[0];
  const running = latest?.state === 'Started' ? `version ${latest.version} is running` : undefined;
  if (completed) {
    const done = `version ${completed.version} completed ${at(completed.finished_at)}`;
    return { title, state: 'done', why: running ? `${done}; ${running}` : done };
  }
  if (running) return { title, state: 'running', why: running };
  if (latest) return { title, state: 'failed', why: `version ${latest.version} failed: see its report below` };
  return { title, state: 'todo', why: dryRun ? 'no dry run yet' : 'no real run yet' };
}

/** Step 4: refresh tokens carried over, by the latest run that reported them. */
function refreshTokenStep({ migration, markers }: CutoverFacts): CutoverStep {
  const title =
    "Copy the source's key ring and application name, set MigrateRefreshTokens, dry-run until tokens carry over";
  if (!migration.MigrateRefreshTokens)
    return { title, state: 'todo', why: 'Migration:MigrateRefreshTokens is off: users would sign in again' };
  const reported = markers.find((m) => refreshTokenTally(m));
  const tally = reported && refreshTokenTally(reported);
  if (!tally) return { title, state: 'todo', why: 'no run has reported refresh tokens yet' };
  const fixable = Object.entries(tally.notCarried).filter(([reason, n]) => !LEFT_BEHIND_RIGHTLY.test(reason) && n > 0);
  if (fixable.length > 0)
    return {
      title,
      state: 'check',
      why: `version ${reported.version}: ${fixable.map(([reason, n]) => `${n} ${reason}`).join('; ')}`,
    };
  return { title, state: 'done', why: `version ${reported.version}: ${tally.carriedOver} carried over` };
}

/** Step 5: a final sweep under a new version, the source's signing keys, both windows configured. */
function finalSweepStep({ migration, markers, signingKeys }: CutoverFacts): CutoverStep {
  const title =
    'Final sweep under a new Version, signing keys carried over, the read-through and source-session windows open';
  const realVersions = markers.filter((m) => !m.dry_run && m.state === 'Completed').length;
  const imported = (signingKeys.static ?? 0) + (signingKeys.migrated ?? 0);
  const parts = [
    [
      realVersions >= 2,
      `${realVersions} completed real run${realVersions === 1 ? '' : 's'} (a sweep is a second version)`,
    ],
    [imported > 0, `${imported} signing key${imported === 1 ? '' : 's'} from the source`],
    [
      migration.ReadThrough.Until !== undefined,
      `ReadThrough:Until ${migration.ReadThrough.Until ? at(migration.ReadThrough.Until) : 'not set'}`,
    ],
    // Browsers signed in at the source are signed in here only while this window is open (docs/migration.md, step 5).
    [
      migration.SourceSessions.Until !== undefined,
      `SourceSessions:Until ${migration.SourceSessions.Until ? at(migration.SourceSessions.Until) : 'not set: browsers signed in at the source sign in again'}`,
    ],
  ] as const;
  const met = parts.filter(([ok]) => ok).length;
  const sweeping = markers.find((m) => !m.dry_run)?.state === 'Started' && realVersions > 0;
  const state = met === parts.length ? 'done' : met > 0 || sweeping ? 'running' : 'todo';
  return { title, state, why: parts.map(([ok, text]) => `${ok ? '✓' : '✗'} ${text}`).join(' · ') };
}

/** Steps 6 and 7: clients repointed (seen only through the window's look-ups), and the window closed. */
function windowSteps({ migration, tallies, now }: CutoverFacts): CutoverStep[] {
  const until = migration.ReadThrough.Until;
  const open = until !== undefined && until > now;
  const lookUps = tallies.reduce((sum, t) => sum + t.count, 0);
  return [
    {
      title: 'Repoint clients to Api:PublicUrl',
      state: open && lookUps > 0 ? 'running' : until && !open ? 'done' : 'todo',
      why: `the service sees this only through the window: ${lookUps} look-up${lookUps === 1 ? '' : 's'} in the source so far`,
    },
    {
      title: 'Close the window once every client is repointed',
      state: until === undefined ? 'todo' : open ? 'running' : 'done',
      why: until === undefined ? 'no window configured' : open ? `open until ${at(until)}` : `closed ${at(until)}`,
    },
  ];
}

/** docs/migration.md's cutover, step by step, with the state of each. */
export function cutoverSteps(facts: CutoverFacts): CutoverStep[] {
  return [
    { title: 'Deploy with Migration:Enabled false', state: 'done', why: 'this service is running' },
    runStep(facts, true),
    runStep(facts, false),
    refreshTokenStep(facts),
    finalSweepStep(facts),
    ...windowSteps(facts),
    { title: 'Roll back, if needed, by repointing to the untouched source', state: 'todo', why: 'only if needed' },
  ];
}
