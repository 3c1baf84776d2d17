import { NativeConnection } from '@temporalio/worker';
import { parseConfig } from '../../config/load';
import { createServiceContext, migrationDependencies } from '../../composition/service-context';
import { createMigrationWorker } from '../../workers/create-worker';

/** A migration worker in a process of its own, so a test can kill it with SIGKILL in the middle of a run. */
async function main(): Promise<void> {
  const [address, targetUrl, sourceUrl, taskQueue, key, bundle] = process.argv.slice(2);
  const config = parseConfig({ Migration: { Source: { ConnectionString: sourceUrl } }, DataProtection: { Key: key } });
  const context = await createServiceContext(config, targetUrl);
  const connection = await NativeConnection.connect({ address });
  const worker = await createMigrationWorker({
    connection,
    namespace: 'default',
    taskQueue,
    dependencies: migrationDependencies(context),
    workflowBundle: { codePath: bundle },
  });
  process.stdout.write('ready\n');
  await worker.run();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
