import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { NativeConnection, Worker, type WorkflowBundleOption } from '@temporalio/worker';
import { createMigrationActivities, type MigrationDependencies } from '../activities/migration';
import { createProvisioningActivities, type ProvisioningDependencies } from '../activities/provisioning';

export const WORKFLOWS_PATH = require.resolve('../workflows');
/** Written by `npm run build:workflows`; a worker started without it bundles the workflow code itself. */
export const PREBUILT_BUNDLE_PATH = join(__dirname, '..', 'dist', 'workflow-bundle.js');

export interface WorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  dependencies: ProvisioningDependencies;
  /** Tests bundle once per run and share the bundle between workers. */
  workflowBundle?: WorkflowBundleOption;
}

function workflowSource(workflowBundle?: WorkflowBundleOption) {
  const bundle = workflowBundle ?? (existsSync(PREBUILT_BUNDLE_PATH) ? { codePath: PREBUILT_BUNDLE_PATH } : undefined);
  return bundle ? { workflowBundle: bundle } : { workflowsPath: WORKFLOWS_PATH };
}

export async function createProvisioningWorker({ connection, namespace, taskQueue, dependencies, workflowBundle }: WorkerOptions): Promise<Worker> {
  return Worker.create({
    connection,
    namespace,
    taskQueue,
    activities: createProvisioningActivities(dependencies),
    ...workflowSource(workflowBundle),
    maxConcurrentWorkflowTaskExecutions: 100,
    maxConcurrentLocalActivityExecutions: 200,
  });
}

/** Migration pages are heavy: a few at a time per worker (independent passes run side by side), each a regular activity that heartbeats. */
export async function createMigrationWorker({ connection, namespace, taskQueue, dependencies, workflowBundle }: Omit<WorkerOptions, 'dependencies'> & { dependencies: MigrationDependencies }): Promise<Worker> {
  return Worker.create({
    connection,
    namespace,
    taskQueue,
    activities: createMigrationActivities(dependencies),
    ...workflowSource(workflowBundle),
    maxConcurrentActivityTaskExecutions: 4,
  });
}
