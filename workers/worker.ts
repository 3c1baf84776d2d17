import { Client } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { loadConfig } from '../config/load';
import type { AppConfig } from '../config/schema';
import { required, runMain } from '../infra/process';
import { createServiceContext, type ServiceContext } from '../infra/service-context';
import { createProvisioningWorker } from './create-worker';

export interface RunningWorker {
  worker: Worker;
  /** A client on the worker's connection, for an API running in the same process. */
  client: Client;
  context: ServiceContext;
  /** Resolves when the worker has drained and its connections are closed. */
  stop(): Promise<void>;
}

export async function startWorker(config: AppConfig, temporalAddress: string, databaseUrl: string): Promise<RunningWorker> {
  const context = await createServiceContext(config, databaseUrl);
  const connection = await NativeConnection.connect({ address: temporalAddress });
  const worker = await createProvisioningWorker({ connection, namespace: config.Temporal.Namespace, taskQueue: config.Temporal.TaskQueue, dependencies: context });
  const running = worker.run();
  return {
    worker,
    client: new Client({ connection, namespace: config.Temporal.Namespace }),
    context,
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await connection.close();
      await context.close();
    },
  };
}

if (require.main === module) {
  runMain('worker', async () => {
    const config = loadConfig();
    const databaseUrl = required(config.Database.Url, 'the worker alone needs DATABASE_URL (or Database:Url); `npm start` runs everything embedded');
    const address = required(config.Temporal.Address, 'the worker alone needs TEMPORAL_ADDRESS (or Temporal:Address); `npm start` runs everything embedded');
    const running = await startWorker(config, address, databaseUrl);
    console.log(`worker: polling task queue ${running.worker.options.taskQueue} on ${address}`);
    return running.stop;
  });
}
