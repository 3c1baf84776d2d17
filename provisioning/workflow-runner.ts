import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Workflow } from '@temporalio/common';
import { provisioningAttempts } from '../platform/observability/metrics';
import { within } from '../platform/net/within';
import { ResultDeadlineError, TemporalUnavailableError } from '../platform/temporal/run-errors';
import { createUserAndProvision, provisionExistingUser, reactivateAndProvision } from './workflows/provisioning';
import { startAttempt, startDetached, unreachable, type RunOptions, type StartTarget } from './workflow-starts';

export type { RunOptions };

/** The workflows that are provisioning attempts, counted by trigger and outcome in provisioning_attempts_total. */
const PROVISIONING_ATTEMPTS = new Set<Workflow>([
  createUserAndProvision,
  provisionExistingUser,
  reactivateAndProvision,
]);

/** Starts (or finds) the run and waits for its result up to the deadline, counting a provisioning attempt's outcome. */
async function run<W extends Workflow>(
  target: StartTarget,
  deadlineSeconds: number,
  workflow: W,
  options: RunOptions<W>,
): Promise<Awaited<ReturnType<W>>> {
  const handle = await startAttempt(target, workflow, options);
  const count = (outcome: string) =>
    PROVISIONING_ATTEMPTS.has(workflow) && provisioningAttempts.inc({ trigger: options.search.trigger, outcome });
  try {
    const result = (await within(
      deadlineSeconds * 1000,
      handle.result(),
      () => new ResultDeadlineError(options.workflowId, deadlineSeconds),
    )) as Awaited<ReturnType<W>>;
    count((result as { status: string }).status);
    return result;
  } catch (error) {
    count(error instanceof ResultDeadlineError ? 'deadline' : 'error');
    throw error;
  }
}

/** Whether a workflow with this id is running now (false when it ended or never existed). */
async function isRunning(client: Client, workflowId: string): Promise<boolean> {
  try {
    return (await client.workflow.getHandle(workflowId).describe()).status.name === 'RUNNING';
  } catch (error) {
    if (error instanceof WorkflowNotFoundError) return false;
    if (unreachable(error)) throw new TemporalUnavailableError(error);
    throw error;
  }
}

/** Starts a workflow on the service's task queue and waits for its result, up to the API's deadline. */
export function createWorkflowRunner(client: Client, taskQueue: string, deadlineSeconds: number) {
  const target: StartTarget = { client, taskQueue };
  return Object.assign(
    <W extends Workflow>(workflow: W, options: RunOptions<W>) => run(target, deadlineSeconds, workflow, options),
    {
      isRunning: (workflowId: string) => isRunning(client, workflowId),
      startDetached: <W extends Workflow>(
        workflow: W,
        options: { workflowId: string; args: Parameters<W>; userId: string },
      ) => startDetached(target, workflow, options),
    },
  );
}

export type WorkflowRunner = ReturnType<typeof createWorkflowRunner>;
