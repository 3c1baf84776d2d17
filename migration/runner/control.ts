import type { Client } from '@temporalio/client';
import type { MigrationOptions } from '../activities/types';
import type { AppConfig } from '../../platform/config/config-schema';
import { migrationRun, migrationWorkflowId, type MigrationReport } from '../workflows/migration';

export function migrationOptions(config: AppConfig, overrides: Partial<MigrationOptions> = {}): MigrationOptions {
  const m = config.Migration;
  return {
    version: m.Version,
    dryRun: m.DryRun,
    usersMode: m.UsersMode,
    migrateClients: m.MigrateClients,
    migrateRefreshTokens: m.MigrateRefreshTokens,
    sourceGrantKeysAreUnhashed: m.SourceGrantKeysAreUnhashed,
    // Where the source's Data Protection application name is known: its keys open only under it.
    migrateSigningKeys: m.MigrateSigningKeys && Boolean(m.SourceDataProtection.ApplicationName),
    keyManagement: {
      RotationInterval: config.KeyManagement.RotationInterval,
      PropagationTime: config.KeyManagement.PropagationTime,
      RetentionDuration: config.KeyManagement.RetentionDuration,
      KeyCacheDuration: config.KeyManagement.KeyCacheDuration,
    },
    pageSize: m.PageSize,
    parallelism: m.Parallelism,
    ...overrides,
  };
}

/**
 * Starts the run `migration-{Version}`, or attaches to it when another instance already started it: the
 * workflow id is the lease, so only one run per version ever executes, whoever asks.
 */
export async function startOrAttachMigration(client: Client, config: AppConfig, options: MigrationOptions) {
  return client.workflow.start(migrationRun, {
    taskQueue: config.Temporal.MigrationTaskQueue,
    workflowId: migrationWorkflowId(options.version),
    workflowIdConflictPolicy: 'USE_EXISTING',
    args: [{ options }],
  });
}

export async function waitForMigration(
  handle: Awaited<ReturnType<typeof startOrAttachMigration>>,
  timeoutMs: number,
): Promise<MigrationReport | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), timeoutMs);
  });
  try {
    return await Promise.race([handle.result(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
