import { ApplicationFailure, continueAsNew, executeChild, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { MigrationActivities } from '../activities/migration-activities';
import { addCounts, noCounts, type Counts } from '../store/migration-counts';
import { PASS_PLAN, PASSES, planOf, type PassName, type PlannedPass } from '../activities/plan';
import {
  userCursor,
  type ClientReadiness,
  type MigrationOptions,
  type RefreshTokenTally,
  type SigningKeyTally,
  type UserPartition,
} from '../activities/types';
import type { SourceValidation } from '../activities/validation';

const markers = proxyActivities<MigrationActivities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 10 },
});
const pages = proxyActivities<MigrationActivities>({
  startToCloseTimeout: '10 minutes',
  // A worker that dies mid-page is noticed this quickly; the page is then redone elsewhere (pages are idempotent).
  heartbeatTimeout: '20 seconds',
  retry: { initialInterval: '2 seconds', maximumInterval: '1 minute', maximumAttempts: 20 },
});

/** Warnings kept per pass in the report; the rest are counted. */
const WARNINGS_KEPT = 100;
/** A pass continues as new after this many pages, so its history stays small whatever the source's size. */
const PAGES_PER_RUN = 200;

export interface PassReport extends Counts {
  pass: PassName;
  /** The clients pass: clients that will work as at IdentityServer, and those that will notice the cutover. */
  readiness?: ClientReadiness;
  /** The refresh-tokens pass: how many were (or would be) carried over, and why the others were not. */
  refreshTokens?: RefreshTokenTally;
  /** The signing-keys pass: how many were (or would be) imported, were there already or retired, and why not. */
  signingKeys?: SigningKeyTally;
  warnings: string[];
  moreWarnings: number;
  pages: number;
  /** Wall time of the pass (workflow time: the same on every replay). */
  seconds: number;
}

export interface MigrationReport {
  version: string;
  dryRun: boolean;
  state: 'Completed' | 'Failed' | 'Skipped';
  reason?: string;
  validation?: SourceValidation;
  passes: PassReport[];
  error?: string;
}

/** A failed page arrives wrapped (child workflow → activity → application failure); the innermost message says what broke. */
function rootMessage(error: unknown): string {
  let current = error as Error | undefined;
  while (current?.cause instanceof Error) current = current.cause;
  return current?.message ?? String(error);
}

export const migrationWorkflowId = (version: string) => `migration-${version}`;

const ONE_PARTITION: UserPartition[] = [{ after: null, until: null }];

interface PassInput {
  pass: PassName;
  options: MigrationOptions;
  /** Key ranges of a user-keyed pass; one open range for every other pass. */
  partitions: UserPartition[];
  /** The partition this workflow pages through; absent on a pass of several partitions, which runs one child each. */
  partition?: number;
  cursor?: string | null;
  report?: PassReport;
}

const emptyReport = (pass: PassName): PassReport => ({
  pass,
  ...noCounts(),
  warnings: [],
  moreWarnings: 0,
  pages: 0,
  seconds: 0,
});

function addWarnings(report: PassReport, warnings: string[], more: number): void {
  const room = Math.max(0, WARNINGS_KEPT - report.warnings.length);
  report.warnings.push(...warnings.slice(0, room));
  report.moreWarnings += more + Math.max(0, warnings.length - room);
}

const elapsed = (since: number, before = 0) => Math.round((before + (Date.now() - since) / 1000) * 100) / 100;

/**
 * One pass (`migration-{Version}-{pass}`): keyset pages, one activity each, until the source is exhausted. A pass of
 * several partitions runs each as a child (`…-{pass}-part-{n}`) and adds up their reports. Returns counts and
 * warnings, never rows.
 */
export async function migrationPass(input: PassInput): Promise<PassReport> {
  return input.partition === undefined && input.partitions.length > 1 ? fanOut(input) : pageThrough(input);
}

/** A pass of several partitions: one child a partition, their reports added up. */
async function fanOut(input: PassInput): Promise<PassReport> {
  const started = Date.now();
  const parts = await Promise.all(
    input.partitions.map((_, partition) =>
      executeChild(migrationPass, {
        workflowId: `${workflowInfo().workflowId}-part-${partition + 1}`,
        args: [{ ...input, partition }],
      }),
    ),
  );
  const report = emptyReport(input.pass);
  for (const part of parts) {
    addCounts(report, part);
    report.pages += part.pages;
    addWarnings(report, part.warnings, part.moreWarnings);
  }
  return { ...report, seconds: elapsed(started) };
}

/** One partition: keyset pages, one activity each, continuing as new every PAGES_PER_RUN pages. */
async function pageThrough(input: PassInput): Promise<PassReport> {
  const started = Date.now();
  const partition = input.partition ?? 0;
  const { after, until } = input.partitions[partition];
  const report = input.report ?? emptyReport(input.pass);
  let cursor = input.cursor === undefined ? userCursor(after) : input.cursor;
  for (let pagesThisRun = 0; ; pagesThisRun++) {
    if (pagesThisRun === PAGES_PER_RUN) {
      await continueAsNew<typeof migrationPass>({
        ...input,
        cursor,
        report: { ...report, seconds: elapsed(started, report.seconds) },
      });
    }
    const page = await pages.runPassPage({
      pass: input.pass,
      options: input.options,
      cursor,
      until,
      partition,
      partitions: input.partitions.length,
      totals: addCounts(noCounts(), report),
    });
    addCounts(report, page);
    report.pages++;
    addWarnings(report, page.warnings, 0);
    if (page.readiness) {
      const sum = (report.readiness ??= { ready: 0, willNotice: 0 });
      sum.ready += page.readiness.ready;
      sum.willNotice += page.readiness.willNotice;
    }
    if (page.refreshTokens) {
      const sum = (report.refreshTokens ??= { carriedOver: 0, notCarried: {} });
      sum.carriedOver += page.refreshTokens.carriedOver;
      for (const [reason, count] of Object.entries(page.refreshTokens.notCarried))
        sum.notCarried[reason] = (sum.notCarried[reason] ?? 0) + count;
    }
    if (page.signingKeys) addSigningKeys((report.signingKeys ??= noSigningKeys()), page.signingKeys);
    if (page.next === null) return { ...report, seconds: elapsed(started, report.seconds) };
    cursor = page.next;
  }
}

const noSigningKeys = (): SigningKeyTally => ({ imported: 0, alreadyStored: 0, retired: 0, notImported: {} });

function addSigningKeys(sum: SigningKeyTally, page: SigningKeyTally): void {
  sum.imported += page.imported;
  sum.alreadyStored += page.alreadyStored;
  sum.retired += page.retired;
  for (const [reason, count] of Object.entries(page.notImported))
    sum.notImported[reason] = (sum.notImported[reason] ?? 0) + count;
}

/**
 * Runs each pass once the passes it comes `after` (among these) have ended: those that need nothing of each other
 * side by side, started in plan order.
 */
async function runInPlanOrder(passes: readonly PlannedPass[], run: (pass: PassName) => Promise<void>): Promise<void> {
  const names = new Set<PassName>(passes.map((p) => p.name));
  const done = new Set<PassName>();
  const started = new Set<PassName>();
  const ready = () =>
    passes.filter((p) => !started.has(p.name) && p.after.every((dep) => !names.has(dep) || done.has(dep)));
  const start = (pass: PlannedPass): Promise<void> => {
    started.add(pass.name);
    return run(pass.name).then(() => {
      done.add(pass.name);
      return Promise.all(ready().map(start)).then(() => undefined);
    });
  };
  await Promise.all(ready().map(start));
}

/**
 * A migration run, id `migration-{Version}`: Temporal's id uniqueness is the cluster leadership the spec asks for.
 * Marker none → Started → Completed / Failed, with the report attached; passes run in dependency order.
 */
export async function migrationRun(input: { options: MigrationOptions }): Promise<MigrationReport> {
  const { options } = input;
  const report: MigrationReport = { version: options.version, dryRun: options.dryRun, state: 'Completed', passes: [] };
  const begin = await markers.beginRun(options);
  if (!begin.proceed) return { ...report, state: 'Skipped', reason: begin.reason };
  try {
    // Checked before anything is written.
    const checked = await markers.preflight(options);
    if (checked.fatal) throw ApplicationFailure.nonRetryable(checked.fatal, 'MigrationCannotStart');
    if (options.dryRun) report.validation = await markers.validateSource();
    const partitions = await markers.planUserPartitions({
      partitions: options.parallelism,
      pageSize: options.pageSize,
    });
    const runPass = async (pass: PassName) => {
      const skippedPass = checked.skipped.find((s) => s.pass === pass);
      if (skippedPass) return void report.passes.push({ ...emptyReport(pass), warnings: [skippedPass.warning] });
      const args = { pass, options, partitions: planOf(pass).keyedByUser ? partitions : ONE_PARTITION };
      report.passes.push(
        await executeChild(migrationPass, { workflowId: `${workflowInfo().workflowId}-${pass}`, args: [args] }),
      );
    };
    await runInPlanOrder(
      PASS_PLAN.filter((p) => !p.ofCreatedUsers),
      runPass,
    );
    const ofCreatedUsers = PASS_PLAN.filter((p) => p.ofCreatedUsers);
    // Under CreateOnly these passes work only on the users this run (or an earlier attempt of it) created: when there
    // are none, as in a sweep of an unchanged source, there is nothing for them to read.
    if (
      options.usersMode === 'CreateOnly' &&
      !options.dryRun &&
      !(await markers.anyUserCreatedBy({ version: options.version }))
    ) {
      report.passes.push(
        ...ofCreatedUsers.map((p) => ({
          ...emptyReport(p.name),
          warnings: ['no user was created by this run, so no roles, logins or MFA were read'],
        })),
      );
    } else await runInPlanOrder(ofCreatedUsers, runPass);
    report.passes.sort((a, b) => PASSES.indexOf(a.pass) - PASSES.indexOf(b.pass));
    await markers.finishRun({ version: options.version, state: 'Completed', report: { ...report } });
    return report;
  } catch (error) {
    const failed: MigrationReport = { ...report, state: 'Failed', error: rootMessage(error) };
    await markers.finishRun({ version: options.version, state: 'Failed', report: { ...failed } });
    return failed;
  }
}

/**
 * A scheduled delta sweep: a CreateOnly run under a fresh version (`sweep-{start time}`), so users registered in
 * the source since the last run are picked up and nothing existing is touched.
 */
export async function migrationSweep(input: { options: MigrationOptions }): Promise<MigrationReport> {
  const version = `sweep-${workflowInfo().startTime.toISOString().replace(/[-:.]/g, '').replace('T', '-').replace('Z', '')}`;
  const options: MigrationOptions = { ...input.options, version, dryRun: false, usersMode: 'CreateOnly' };
  return executeChild(migrationRun, { workflowId: migrationWorkflowId(version), args: [{ options }] });
}
