import {
  isGrpcServiceError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  type Client,
  type WorkflowHandle,
  type WorkflowStartOptions,
} from '@temporalio/client';
import type { Workflow } from '@temporalio/common';
import type { Trigger } from './workflows/ids';
import { PROVISIONING_TRIGGER, USER_ID } from '../platform/temporal/search-attributes';
import { provisioningAttempts } from '../platform/observability/metrics';
import { within } from '../platform/net/within';
import { AttemptInProgressError, ResultDeadlineError, TemporalUnavailableError } from '../platform/temporal/run-errors';
import { createUserAndProvision, provisionExistingUser, reactivateAndProvision } from './workflows/provisioning';

export interface RunOptions<W extends Workflow> {
  workflowId: string;
  args: Parameters<W>;
  /** Whom the workflow is for and what started it: search attributes an operator finds it by (never personal data). */
  search: { userId: string; trigger: Trigger };
  /** `result`: an id whose workflow has already ended answers that workflow's result instead of starting another run. */
  onEnded?: 'start-again' | 'result';
}

/** The workflows that are provisioning attempts, counted by trigger and outcome in provisioning_attempts_total. */
const PROVISIONING_ATTEMPTS = new Set<Workflow>([
  createUserAndProvision,
  provisionExistingUser,
  reactivateAndProvision,
]);

/** How long starting a workflow may take before the answer is 503: the SDK would otherwise retry for many seconds. */
const START_DEADLINE_MS = 10_000;

/** gRPC status codes of a server that did not answer: UNAVAILABLE, DEADLINE_EXCEEDED. */
const UNREACHABLE_CODES = [14, 4];

function unreachable(error: unknown): boolean {
  const grpc = isGrpcServiceError(error)
    ? error
    : isGrpcServiceError((error as Error)?.cause)
      ? ((error as Error).cause as { code: number })
      : undefined;
  return grpc !== undefined && UNREACHABLE_CODES.includes(grpc.code);
}

/** Starts a workflow on the service's task queue and waits for its result, up to the API's deadline. */
export function createWorkflowRunner(client: Client, taskQueue: string, deadlineSeconds: number) {
  /** Starts a run on the task queue within START_DEADLINE_MS. */
  function start<W extends Workflow>(
    workflow: W,
    options: Record<string, unknown> & { workflowId: string; args: Parameters<W> },
  ): Promise<WorkflowHandle<W>> {
    // The SDK types args through a conditional type that generic callers cannot satisfy.
    const startOptions = { taskQueue, ...options } as unknown as WorkflowStartOptions<W>;
    return client.connection.withDeadline(Date.now() + START_DEADLINE_MS, () =>
      client.workflow.start(workflow, startOptions),
    );
  }

  async function run<W extends Workflow>(workflow: W, options: RunOptions<W>): Promise<Awaited<ReturnType<W>>> {
    let handle: WorkflowHandle<W>;
    try {
      handle = await start(workflow, {
        workflowId: options.workflowId,
        args: options.args,
        typedSearchAttributes: [
          { key: USER_ID, value: options.search.userId },
          { key: PROVISIONING_TRIGGER, value: options.search.trigger },
        ],
        // What an operator reads in the Temporal UI's list and page (sealed by the payload codec, as every payload).
        staticSummary: `${options.search.trigger}: ${workflow.name} for user ${options.search.userId}`,
        // A second request for an id that is running waits on that run instead of starting another.
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: options.onEnded === 'result' ? 'REJECT_DUPLICATE' : 'ALLOW_DUPLICATE',
      });
    } catch (error) {
      if (error instanceof WorkflowExecutionAlreadyStartedError) {
        if (options.onEnded !== 'result') throw new AttemptInProgressError(options.workflowId);
        handle = client.workflow.getHandle(options.workflowId);
      } else if (unreachable(error)) {
        throw new TemporalUnavailableError(error);
      } else {
        throw error;
      }
    }
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
  async function isRunning(workflowId: string): Promise<boolean> {
    try {
      return (await client.workflow.getHandle(workflowId).describe()).status.name === 'RUNNING';
    } catch (error) {
      if (error instanceof WorkflowNotFoundError) return false;
      if (unreachable(error)) throw new TemporalUnavailableError(error);
      throw error;
    }
  }

  /**
   * Starts a workflow that goes on without the caller (a sign-out's notices to clients): answers once Temporal has it,
   * never waits for its result.
   */
  async function startDetached<W extends Workflow>(
    workflow: W,
    options: { workflowId: string; args: Parameters<W>; userId: string },
  ): Promise<void> {
    try {
      await start(workflow, {
        workflowId: options.workflowId,
        args: options.args,
        typedSearchAttributes: [{ key: USER_ID, value: options.userId }],
        staticSummary: `${workflow.name} for user ${options.userId}`,
      });
    } catch (error) {
      if (unreachable(error)) throw new TemporalUnavailableError(error);
      throw error;
    }
  }

  return Object.assign(run, { isRunning, startDetached });
}

export type WorkflowRunner = ReturnType<typeof createWorkflowRunner>;
