import { NativeConnection, type Worker } from '@temporalio/worker';
import { runWorkerProcess } from './worker-process';
import { parseConfig } from '../../platform/config/load';
import { createServiceContext, migrationDependencies } from '../../composition/service-context';
import { createMigrationWorker, workerHome } from '../../workers/create-worker';
import { TEST_PAYLOAD_KEYS } from './harness';

/** A migration worker in a process of its own, so a test can kill it with SIGKILL in the middle of a run. */
async function startWorker(): Promise<Worker> {
  const [address, targetUrl, sourceUrl, taskQueue, key, bundle] = process.argv.slice(2);
  const config = parseConfig({
    Migration: { Source: { ConnectionString: sourceUrl } },
    DataProtection: { Key: key },
    Temporal: { MigrationTaskQueue: taskQueue, PayloadKeys: TEST_PAYLOAD_KEYS },
  });
  const context = await createServiceContext(config, targetUrl);
  const connection = await NativeConnection.connect({ address });
  return createMigrationWorker(workerHome(connection, config, { codePath: bundle }), migrationDependencies(context));
}

runWorkerProcess(startWorker);
