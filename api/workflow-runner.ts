import { WorkflowExecutionAlreadyStartedError, type Client, type WorkflowHandle, type WorkflowStartOptions } from '@temporalio/client';
import type { Workflow } from '@temporalio/common';

export class AttemptInProgressError extends Error {
  constructor(readonly workflowId: string) {
    super(`another attempt with workflow id ${workflowId} is still running`);
  }
}

export class ResultDeadlineError extends Error {
  constructor(readonly workflowId: string, seconds: number) {
    super(`workflow ${workflowId} did not finish within ${seconds} s; it keeps running and its outcome is visible in the Temporal UI`);
  }
}

export interface RunOptions<W extends Workflow> {
  workflowId: string;
  args: Parameters<W>;
  /** `attach`: a second request for the same id waits on the running attempt instead of failing. */
  onRunning: 'fail' | 'attach';
}

/** Starts a workflow on the service's task queue and waits for its result, up to the API's deadline. */
export function createWorkflowRunner(client: Client, taskQueue: string, deadlineSeconds: number) {
  return async function run<W extends Workflow>(workflow: W, options: RunOptions<W>): Promise<Awaited<ReturnType<W>>> {
    let handle: WorkflowHandle<W>;
    try {
      const startOptions = {
        taskQueue,
        workflowId: options.workflowId,
        args: options.args,
        workflowIdConflictPolicy: options.onRunning === 'attach' ? 'USE_EXISTING' : 'FAIL',
      } as unknown as WorkflowStartOptions<W>; // the SDK types args through a conditional type that generic callers cannot satisfy
      handle = await client.workflow.start(workflow, startOptions);
    } catch (error) {
      if (error instanceof WorkflowExecutionAlreadyStartedError) throw new AttemptInProgressError(options.workflowId);
      throw error;
    }
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new ResultDeadlineError(options.workflowId, deadlineSeconds)), deadlineSeconds * 1000);
    });
    try {
      return (await Promise.race([handle.result(), deadline])) as Awaited<ReturnType<W>>;
    } finally {
      clearTimeout(timer);
    }
  };
}

export type WorkflowRunner = ReturnType<typeof createWorkflowRunner>;
