import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorkflowCode, NativeConnection, Worker, type WorkflowBundleOption } from '@temporalio/worker';
import { createMigrationActivities, type MigrationDependencies } from '../activities/migration';
import { MIGRATION_PAGES_AT_ONCE } from '../migration-source/connection';
import {
  createProvisioningActivities,
  type ProvisioningActivities,
  type ProvisioningDependencies,
} from '../activities/provisioning';

export const WORKFLOWS_PATH = require.resolve('../workflows');
/** Written by `npm run build:workflows`; a worker started without it bundles the workflow code itself. */
export const PREBUILT_BUNDLE_PATH = join(__dirname, '..', 'dist', 'workflow-bundle.js');

export interface WorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  dependencies: ProvisioningDependencies;
  /** The activities built from `dependencies`, unless given (a test wraps them to fail at a chosen step). */
  activities?: ProvisioningActivities;
  /** One bundle shared by every worker of a process (and, in tests, of a whole run). */
  workflowBundle?: WorkflowBundleOption;
}

/** The prebuilt bundle when there is one; otherwise the workflow code bundled now, once, for all workers of this process. */
export async function loadWorkflowBundle(): Promise<WorkflowBundleOption> {
  if (existsSync(PREBUILT_BUNDLE_PATH)) return { codePath: PREBUILT_BUNDLE_PATH };
  return { code: (await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH })).code };
}

function workflowSource(workflowBundle?: WorkflowBundleOption) {
  const bundle = workflowBundle ?? (existsSync(PREBUILT_BUNDLE_PATH) ? { codePath: PREBUILT_BUNDLE_PATH } : undefined);
  return bundle ? { workflowBundle: bundle } : { workflowsPath: WORKFLOWS_PATH };
}

export async function createProvisioningWorker({
  connection,
  namespace,
  taskQueue,
  dependencies,
  activities,
  workflowBundle,
}: WorkerOptions): Promise<Worker> {
  return Worker.create({
    connection,
    namespace,
    taskQueue,
    activities: activities ?? createProvisioningActivities(dependencies),
    ...workflowSource(workflowBundle),
    maxConcurrentWorkflowTaskExecutions: 100,
    maxConcurrentLocalActivityExecutions: 200,
  });
}

/** Migration pages are regular activities that heartbeat, MIGRATION_PAGES_AT_ONCE at a time per worker. */
export async function createMigrationWorker({
  connection,
  namespace,
  taskQueue,
  dependencies,
  workflowBundle,
}: Omit<WorkerOptions, 'dependencies'> & { dependencies: MigrationDependencies }): Promise<Worker> {
  return Worker.create({
    connection,
    namespace,
    taskQueue,
    activities: createMigrationActivities(dependencies),
    ...workflowSource(workflowBundle),
    maxConcurrentActivityTaskExecutions: MIGRATION_PAGES_AT_ONCE,
  });
}
