import { ApplicationFailure, Context, log } from '@temporalio/activity';
import { recordPassProgress } from '../store/migration-markers';
import { addCounts, type Counts } from '../store/migration-counts';
import { migrationRows } from '../../platform/observability/metrics';
import { PASS_IMPLEMENTATIONS } from './passes/pass-implementations';
import type { MigrationOptions, PageResult, PassContext, PassName } from './types';

export interface PassPageInput {
  pass: PassName;
  options: MigrationOptions;
  cursor: string | null;
  until: string | null;
  partition: number;
  partitions: number;
  /** The partition's counts before this page. */
  totals: Counts;
}

/**
 * Errors that a retry cannot heal: a missing table or column, a missing permission (SQL Server 207, 208, 229, 230;
 * PostgreSQL 42703, 42P01, 42501). The run fails within seconds with the cause instead of retrying for many minutes.
 */
function cannotHeal(error: unknown): boolean {
  const e = error as { number?: number; code?: string; originalError?: { info?: { number?: number } } };
  const sqlServer = e.number ?? e.originalError?.info?.number;
  return [207, 208, 229, 230].includes(sqlServer ?? -1) || ['42703', '42P01', '42501'].includes(e.code ?? '');
}

/** One keyset page of one partition of a pass; progress goes to the marker so the status endpoint can show it. */
export async function runPassPage(context: Omit<PassContext, 'options'>, input: PassPageInput): Promise<PageResult> {
  Context.current().heartbeat(input.cursor);
  const page = await PASS_IMPLEMENTATIONS[input.pass](
    { ...context, options: input.options },
    input.cursor,
    input.until,
  ).catch((error: unknown) => {
    throw cannotHeal(error)
      ? ApplicationFailure.nonRetryable(`${input.pass}: ${(error as Error).message}`, 'SourceCannotBeRead')
      : error;
  });
  await recordPassProgress(context.target, input.options.version, input, {
    ...addCounts({ ...input.totals }, page),
    done: page.next === null,
  });
  migrationRows.inc({ pass: input.pass, direction: 'read' }, page.read);
  // A dry run's created and updated are what the real run would write: none of it is written.
  if (!input.options.dryRun) migrationRows.inc({ pass: input.pass, direction: 'written' }, page.created + page.updated);
  for (const warning of page.warnings.slice(0, 5)) log.warn(`migration ${input.pass}: ${warning}`);
  return page;
}
