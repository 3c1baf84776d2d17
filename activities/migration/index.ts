import { Context, log } from '@temporalio/activity';
import type { Kysely } from 'kysely';
import type { SourceDatabase } from '../../source/schema';
import type { Db } from '../../store/database';
import { findMarker, recordPassProgress, writeFinishedMarker, writeStartedMarker } from '../../store/migration-markers';
import { clientsPass, scopesPass } from './passes/configuration';
import { rolesPass } from './passes/roles';
import { loginsPass, mfaPass, userRolesPass } from './passes/user-children';
import { oidcProvidersPass, refreshTokensPass, samlProvidersPass } from './passes/providers';
import { usersPass } from './passes/users';
import type { MigrationOptions, PageResult, Pass, PassName, UserPartition } from './types';
import { validateSource, type SourceValidation } from './validation';

export interface MigrationDependencies {
  target: Db;
  /** Absent on a worker that has no Source:ConnectionString: its migration activities fail with a clear message. */
  source?: Kysely<SourceDatabase>;
  dataProtectionKey?: Buffer;
}

const PASS_IMPLEMENTATIONS: Record<PassName, Pass> = {
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

export function createMigrationActivities({ target, source, dataProtectionKey }: MigrationDependencies) {
  function requireSource(): Kysely<SourceDatabase> {
    if (!source) throw new Error('this worker has no Migration:Source:ConnectionString, so it cannot read the source');
    return source;
  }

  return {
    /** Only a Completed marker of a real run blocks a run of the same version. */
    async beginRun(options: MigrationOptions): Promise<{ proceed: boolean; reason?: string }> {
      const marker = await findMarker(target, options.version);
      if (marker?.state === 'Completed' && !marker.dry_run) {
        return { proceed: false, reason: `version ${options.version} completed on ${marker.finished_at?.toISOString()}; change Migration:Version for a delta sweep` };
      }
      await writeStartedMarker(target, options.version, options.dryRun);
      return { proceed: true };
    },

    async validateSource(): Promise<SourceValidation> {
      return validateSource(requireSource());
    },

    /**
     * Splits the source users into up to `partitions` key ranges of about equal size, so the user-keyed passes can page
     * through them side by side. Fewer when the source is small: a partition is worth at least a page.
     */
    async planUserPartitions(input: { partitions: number; pageSize: number }): Promise<UserPartition[]> {
      const db = requireSource();
      const { users } = await db.selectFrom('AspNetUsers').select((eb) => eb.fn.countAll<number>().as('users')).executeTakeFirstOrThrow();
      const count = Math.min(input.partitions, Math.ceil(Number(users) / input.pageSize));
      const bounds: Array<string | null> = [null];
      for (let i = 1; i < count; i++) {
        const at = Math.floor((i * Number(users)) / count) - 1;
        const row = await db.selectFrom('AspNetUsers').select('Id').orderBy('Id').offset(at).fetch(1).executeTakeFirst();
        if (row) bounds.push(row.Id);
      }
      return bounds.map((after, i) => ({ after, until: bounds[i + 1] ?? null }));
    },

    async anyUserCreatedBy(input: { version: string }): Promise<boolean> {
      return (await target.selectFrom('users').select('id').where('migration_version', '=', input.version).limit(1).executeTakeFirst()) !== undefined;
    },

    /** One keyset page of one partition of a pass; progress goes to the marker so the status endpoint can show it. */
    async runPassPage(input: { pass: PassName; options: MigrationOptions; cursor: string | null; until: string | null; partition: number; partitions: number; totals: Record<string, number> }): Promise<PageResult> {
      Context.current().heartbeat(input.cursor);
      const page = await PASS_IMPLEMENTATIONS[input.pass]({ source: requireSource(), target, options: input.options, dataProtectionKey }, input.cursor, input.until);
      const sum = (key: 'read' | 'created' | 'updated' | 'skipped') => (input.totals[key] ?? 0) + page[key];
      await recordPassProgress(target, input.options.version, input, { read: sum('read'), created: sum('created'), updated: sum('updated'), skipped: sum('skipped'), done: page.next === null });
      for (const warning of page.warnings.slice(0, 5)) log.warn(`migration ${input.pass}: ${warning}`);
      return page;
    },

    async finishRun(input: { version: string; state: 'Completed' | 'Failed'; report: Record<string, unknown> }): Promise<void> {
      await writeFinishedMarker(target, input.version, input.state, input.report);
    },
  };
}

export type MigrationActivities = ReturnType<typeof createMigrationActivities>;
