import type { Client } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { loadConfig } from '../platform/config/load';
import type { AppConfig } from '../platform/config/config-schema';
import { runMain, standaloneSettings } from '../composition/process';
import { startHostedMigrationRunner } from '../migration/runner/runner';
import { temporalClient } from '../platform/temporal/data-converter';
import { ensureSearchAttributes } from '../platform/temporal/search-attribute-check';
import { createServiceContext, type ServiceContext, migrationDependencies } from '../composition/service-context';
import { createMigrationWorker, createProvisioningWorker, loadWorkflowBundle, workerHome } from './create-worker';
import { heapLimitNotice } from './heap-limit';
import { logger } from '../platform/observability/logger';
import { startMetricsServer } from '../platform/observability/metrics-server';
import { installTemporalRuntime } from '../platform/observability/temporal-runtime';
import { describeApps } from '../provisioning/apps/app-providers';

export interface RunningWorker {
  worker: Worker;
  /** A client on the worker's connection, for an API running in the same process. */
  client: Client;
  context: ServiceContext;
  /** Resolves when the worker has drained and its connections are closed. */
  stop: () => Promise<void>;
}

export async function startWorker(
  config: AppConfig,
  temporalAddress: string,
  databaseUrl: string,
): Promise<RunningWorker> {
  const context = await createServiceContext(config, databaseUrl);
  const connection = await NativeConnection.connect({ address: temporalAddress });
  await ensureSearchAttributes(connection, config.Temporal.Namespace);
  const home = workerHome(connection, config, await loadWorkflowBundle());
  const worker = await createProvisioningWorker(home, context);
  const migrationWorker = await createMigrationWorker(home, migrationDependencies(context));
  const running = Promise.all([worker.run(), migrationWorker.run()]);
  logger.info(`worker: polling task queues ${config.Temporal.TaskQueue} and ${config.Temporal.MigrationTaskQueue}`);
  logger.info(`worker: provisioning apps: ${await describeApps(context.apps)}`);
  const heap = heapLimitNotice();
  logger[heap.level](heap.message);
  return {
    worker,
    client: temporalClient(connection, config),
    context,
    async stop() {
      for (const w of [worker, migrationWorker]) if (w.getState() === 'RUNNING') w.shutdown();
      await running;
      await connection.close();
      await context.close();
    },
  };
}

if (require.main === module) {
  runMain('worker', async () => {
    const config = loadConfig();
    const { databaseUrl, temporalAddress: address } = standaloneSettings(config, 'worker');
    installTemporalRuntime(config);
    const running = await startWorker(config, address, databaseUrl);
    logger.info(`worker: Temporal at ${address}`);
    const metrics = await startMetricsServer(config, 'worker');
    const runner = startHostedMigrationRunner(config, running.client, running.context.db);
    return async () => {
      runner.stop();
      await metrics?.close();
      await running.stop();
    };
  });
}
