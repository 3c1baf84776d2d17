import { NativeConnection, type Worker } from '@temporalio/worker';
import { runWorkerProcess } from './worker-process';
import { parseConfig } from '../../config/load';
import { createServiceContext, migrationDependencies } from '../../composition/service-context';
import { createMigrationWorker } from '../../workers/create-worker';

/** A migration worker in a process of its own, so a test can kill it with SIGKILL in the middle of a run. */
async function startWorker(): Promise<Worker> {
  const [address, targetUrl, sourceUrl, taskQueue, key, bundle] = process.argv.slice(2);
  const config = parseConfig({ Migration: { Source: { ConnectionString: sourceUrl } }, DataProtection: { Key: key } });
  const context = await createServiceContext(config, targetUrl);
  const connection = await NativeConnection.connect({ address });
  const home = {
    connection,
    temporal: { ...config.Temporal, MigrationTaskQueue: taskQueue },
    workflowBundle: { codePath: bundle },
  };
  return createMigrationWorker(home, migrationDependencies(context));
}

runWorkerProcess(startWorker);
