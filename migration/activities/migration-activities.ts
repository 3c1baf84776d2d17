import type { KeyRing } from '../../platform/security/data-protection';
import { ApplicationFailure, Context, log } from '@temporalio/activity';
import type { Kysely } from 'kysely';
import type { SourceDatabase } from '../source/schema';
import type { SourceDataProtectionSettings } from '../source/data-protection-keys';
import { countUsers, userIdAt } from '../source/user-reads';
import { anyUserCreatedBy } from '../store/migrated-users';
import type { Db } from '../../platform/store/database';
import { findMarker, recordPassProgress, writeFinishedMarker, writeStartedMarker } from '../store/migration-markers';
import { clientsPass, scopesPass } from './passes/configuration';
import { rolesPass } from './passes/roles';
import { loginsPass, mfaPass, userRolesPass } from './passes/user-children';
import { oidcProvidersPass, samlProvidersPass } from './passes/providers';
import { refreshTokensPass } from './passes/refresh-tokens';
import { usersPass } from './passes/users';
import type { MigrationOptions, PageResult, Pass, PassName, UserPartition } from './types';
import { addCounts, type Counts } from '../store/migration-counts';
import { migrationRows } from '../../platform/observability/metrics';
import { preflight, type Preflight } from './preflight';
import { validateSource, type SourceValidation } from './validation';

export interface MigrationDependencies {
  target: Db;
  /** Absent on a worker that has no Source:ConnectionString: its migration activities fail with a clear message. */
  source?: Kysely<SourceDatabase>;
  dataProtection?: KeyRing;
  sourceDataProtection?: SourceDataProtectionSettings;
}

/** Each pass of the plan (plan.ts) by its name. */
export const PASS_IMPLEMENTATIONS: Record<PassName, Pass> = {
  roles: rolesPass,
  users: usersPass,
  'user-roles': userRolesPass,
  logins: loginsPass,
  mfa: mfaPass,
  scopes: scopesPass,
  clients: clientsPass,
  'saml-providers': samlProvidersPass,
  'oidc-providers': oidcProvidersPass,
  'refresh-tokens': refreshTokensPass,
};

/**
 * Errors that a retry cannot heal: a missing table or column, a missing permission (SQL Server 207, 208, 229, 230;
 * PostgreSQL 42703, 42P01, 42501). The run fails within seconds with the cause instead of retrying for many minutes.
 */
function cannotHeal(error: unknown): boolean {
  const e = error as { number?: number; code?: string; originalError?: { info?: { number?: number } } };
  const sqlServer = e.number ?? e.originalError?.info?.number;
  return [207, 208, 229, 230].includes(sqlServer ?? -1) || ['42703', '42P01', '42501'].includes(e.code ?? '');
}

export function createMigrationActivities({
  target,
  source,
  dataProtection,
  sourceDataProtection,
}: MigrationDependencies) {
  function requireSource(): Kysely<SourceDatabase> {
    if (!source) throw new Error('this worker has no Migration:Source:ConnectionString, so it cannot read the source');
    return source;
  }

  return {
    /** Only a Completed marker of a real run blocks a run of the same version. */
    async beginRun(options: MigrationOptions): Promise<{ proceed: boolean; reason?: string }> {
      const marker = await findMarker(target, options.version);
      if (marker?.state === 'Completed' && !marker.dry_run) {
        return {
          proceed: false,
          reason: `version ${options.version} completed on ${marker.finished_at?.toISOString()}; change Migration:Version for a delta sweep`,
        };
      }
      await writeStartedMarker(target, options.version, options.dryRun);
      return { proceed: true };
    },

    async validateSource(): Promise<SourceValidation> {
      return validateSource(requireSource());
    },

    async preflight(options: MigrationOptions): Promise<Preflight> {
      return preflight(requireSource(), options, dataProtection !== undefined);
    },

    /**
     * Splits the source users into up to `partitions` key ranges of about equal size, so the user-keyed passes can page
     * through them side by side. Fewer when the source is small: a partition is worth at least a page.
     */
    async planUserPartitions(input: { partitions: number; pageSize: number }): Promise<UserPartition[]> {
      const db = requireSource();
      const users = await countUsers(db);
      const count = Math.min(input.partitions, Math.ceil(users / input.pageSize));
      const bounds: Array<string | null> = [null];
      for (let i = 1; i < count; i++) {
        const id = await userIdAt(db, Math.floor((i * users) / count) - 1);
        if (id !== undefined) bounds.push(id);
      }
      return bounds.map((after, i) => ({ after, until: bounds[i + 1] ?? null }));
    },

    async anyUserCreatedBy(input: { version: string }): Promise<boolean> {
      return anyUserCreatedBy(target, input.version);
    },

    /** One keyset page of one partition of a pass; progress goes to the marker so the status endpoint can show it. */
    async runPassPage(input: {
      pass: PassName;
      options: MigrationOptions;
      cursor: string | null;
      until: string | null;
      partition: number;
      partitions: number;
      /** The partition's counts before this page. */
      totals: Counts;
    }): Promise<PageResult> {
      Context.current().heartbeat(input.cursor);
      const page = await PASS_IMPLEMENTATIONS[input.pass](
        { source: requireSource(), target, options: input.options, dataProtection, sourceDataProtection },
        input.cursor,
        input.until,
      ).catch((error: unknown) => {
        throw cannotHeal(error)
          ? ApplicationFailure.nonRetryable(`${input.pass}: ${(error as Error).message}`, 'SourceCannotBeRead')
          : error;
      });
      await recordPassProgress(target, input.options.version, input, {
        ...addCounts({ ...input.totals }, page),
        done: page.next === null,
      });
      migrationRows.inc({ pass: input.pass, direction: 'read' }, page.read);
      migrationRows.inc({ pass: input.pass, direction: 'written' }, page.created + page.updated);
      for (const warning of page.warnings.slice(0, 5)) log.warn(`migration ${input.pass}: ${warning}`);
      return page;
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
