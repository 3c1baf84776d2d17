import { existsSync } from 'node:fs';
import { join } from 'node:path';
import {
  bundleWorkflowCode,
  Runtime,
  type NativeConnection,
  Worker,
  type WorkerOptions,
  type WorkflowBundleOption,
} from '@temporalio/worker';
import type { DataConverter } from '@temporalio/common';
import type { AppConfig } from '../platform/config/config-schema';
import { StoreFaultsInterceptor } from './store-faults';
import { FAILURE_CONVERTER_PATH, temporalDataConverter } from '../platform/temporal/data-converter';
import { createMigrationActivities, type MigrationDependencies } from '../migration/activities/migration-activities';
import { MIGRATION_PAGES_AT_ONCE } from '../migration/source/connection';
import {
  createProvisioningActivities,
  type ProvisioningActivities,
  type ProvisioningDependencies,
} from '../provisioning/activities/provisioning-activities';
import { createSignOutActivities, type SignOutDependencies } from '../sign-in/activities/logout-delivery';
import {
  createSigningKeyRotationActivities,
  type SigningKeyRotationDependencies,
} from '../sign-in/activities/signing-key-rotation';

export const WORKFLOWS_PATH = require.resolve('./workflows');
/** What every workflow bundle is built from: the workflow code and the failure converter the sandbox encodes with. */
export const WORKFLOW_CODE = { workflowsPath: WORKFLOWS_PATH, failureConverterPath: FAILURE_CONVERTER_PATH };
/**
 * Written by `npm run build` beside the compiled code (dist/workflow-bundle.js), so the image's workers load it instead
 * of bundling at start. Run from the sources (tsx), no bundle is there and the worker bundles the code it runs.
 */
export const PREBUILT_BUNDLE_PATH = join(__dirname, '..', 'workflow-bundle.js');

/**
 * Where a worker polls: its connection, the namespace and task queues of the Temporal settings, the workflow code, and
 * the data converter its payloads pass through (temporalDataConverter).
 */
export interface WorkerHome {
  connection: NativeConnection;
  dataConverter: DataConverter;
  temporal: Pick<AppConfig['Temporal'], 'Namespace' | 'TaskQueue' | 'MigrationTaskQueue'>;
  /** One bundle shared by every worker of a process (and, in tests, of a whole run). */
  workflowBundle?: WorkflowBundleOption;
}

export function workerHome(
  connection: NativeConnection,
  config: AppConfig,
  workflowBundle?: WorkflowBundleOption,
): WorkerHome {
  return { connection, temporal: config.Temporal, dataConverter: temporalDataConverter(config), workflowBundle };
}

const prebuiltBundle = (): WorkflowBundleOption | undefined =>
  existsSync(PREBUILT_BUNDLE_PATH) ? { codePath: PREBUILT_BUNDLE_PATH } : undefined;

/** The prebuilt bundle when there is one; otherwise the workflow code bundled now, once, for all workers of this process. */
export async function loadWorkflowBundle(): Promise<WorkflowBundleOption> {
  // The bundler reports through the SDK's runtime logger (platform/observability/temporal-runtime.ts), not stdout.
  return (
    prebuiltBundle() ?? {
      code: (await bundleWorkflowCode({ ...WORKFLOW_CODE, logger: Runtime.instance().logger })).code,
    }
  );
}

/** The home's bundle, else the prebuilt one; without either the worker bundles the workflow code itself. */
function workflowSource(workflowBundle?: WorkflowBundleOption) {
  const bundle = workflowBundle ?? prebuiltBundle();
  return bundle ? { workflowBundle: bundle } : { workflowsPath: WORKFLOWS_PATH };
}

function createWorker(
  home: WorkerHome,
  taskQueue: string,
  activities: object,
  limits: Pick<
    WorkerOptions,
    | 'maxConcurrentWorkflowTaskExecutions'
    | 'maxConcurrentLocalActivityExecutions'
    | 'maxConcurrentActivityTaskExecutions'
  >,
): Promise<Worker> {
  return Worker.create({
    connection: home.connection,
    namespace: home.temporal.Namespace,
    dataConverter: home.dataConverter,
    taskQueue,
    activities,
    interceptors: { activity: [() => ({ inbound: new StoreFaultsInterceptor() })] },
    ...workflowSource(home.workflowBundle),
    ...limits,
  });
}

/** How much a provisioning worker runs at once (the provisioning benchmark's one-step baseline polls with the same). */
export const PROVISIONING_WORKER_LIMITS = {
  maxConcurrentWorkflowTaskExecutions: 100,
  maxConcurrentLocalActivityExecutions: 200,
} satisfies Partial<WorkerOptions>;

/**
 * The service's task queue: provisioning, the notices of a user's end to apps and clients (back-channel logout) and
 * signing-key rotation. `activities` replaces the provisioning ones built from `dependencies` (a test wraps them to
 * fail at a chosen step).
 */
export function createProvisioningWorker(
  home: WorkerHome,
  dependencies: ProvisioningDependencies & SignOutDependencies & SigningKeyRotationDependencies,
  activities?: ProvisioningActivities,
): Promise<Worker> {
  return createWorker(
    home,
    home.temporal.TaskQueue,
    {
      ...createSignOutActivities(dependencies),
      ...createSigningKeyRotationActivities(dependencies),
      ...(activities ?? createProvisioningActivities(dependencies)),
    },
    PROVISIONING_WORKER_LIMITS,
  );
}

/** Migration pages are regular activities that heartbeat, MIGRATION_PAGES_AT_ONCE at a time per worker. */
export function createMigrationWorker(home: WorkerHome, dependencies: MigrationDependencies): Promise<Worker> {
  return createWorker(home, home.temporal.MigrationTaskQueue, createMigrationActivities(dependencies), {
    maxConcurrentActivityTaskExecutions: MIGRATION_PAGES_AT_ONCE,
  });
}
