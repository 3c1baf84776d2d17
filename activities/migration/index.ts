import { Context, log } from '@temporalio/activity';
import type { Kysely } from 'kysely';
import type { SourceDatabase } from '../../source/schema';
import type { Db } from '../../store/database';
import { findMarker, recordPassProgress, writeFinishedMarker, writeStartedMarker } from '../../store/migration-markers';
import { clientsPass, scopesPass } from './passes/configuration';
import { loginsPass, mfaPass, rolesPass, userRolesPass } from './passes/identity';
import { oidcProvidersPass, refreshTokensPass, samlProvidersPass } from './passes/providers';
import { usersPass } from './passes/users';
import type { MigrationOptions, PageResult, Pass, PassName } from './types';
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

    /** One keyset page of one pass; progress goes to the marker so the status endpoint can show it. */
    async runPassPage(input: { pass: PassName; options: MigrationOptions; cursor: string | null; totals: Record<string, number> }): Promise<PageResult> {
      Context.current().heartbeat(input.cursor);
      const page = await PASS_IMPLEMENTATIONS[input.pass]({ source: requireSource(), target, options: input.options, dataProtectionKey }, input.cursor);
      const totals = { ...input.totals };
      for (const key of ['read', 'created', 'updated', 'skipped'] as const) totals[key] = (totals[key] ?? 0) + page[key];
      await recordPassProgress(target, input.options.version, input.pass, totals, page.next === null);
      for (const warning of page.warnings.slice(0, 5)) log.warn(`migration ${input.pass}: ${warning}`);
      return page;
    },

    async finishRun(input: { version: string; state: 'Completed' | 'Failed'; report: Record<string, unknown> }): Promise<void> {
      await writeFinishedMarker(target, input.version, input.state, input.report);
    },
  };
}

export type MigrationActivities = ReturnType<typeof createMigrationActivities>;
