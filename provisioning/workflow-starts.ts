import {
  isGrpcServiceError,
  WorkflowExecutionAlreadyStartedError,
  type Client,
  type WorkflowHandle,
  type WorkflowStartOptions,
} from '@temporalio/client';
import type { Workflow } from '@temporalio/common';
import type { Trigger } from './workflows/ids';
import { PROVISIONING_TRIGGER, USER_ID } from '../platform/temporal/search-attributes';
import { AttemptInProgressError, TemporalUnavailableError } from '../platform/temporal/run-errors';

/** Where the runner starts workflows: the client and the service's task queue. */
export interface StartTarget {
  client: Client;
  taskQueue: string;
}

export interface RunOptions<W extends Workflow> {
  workflowId: string;
  args: Parameters<W>;
  /** Whom the workflow is for and what started it: search attributes an operator finds it by (never personal data). */
  search: { userId: string; trigger: Trigger };
  /** `result`: an id whose workflow has already ended answers that workflow's result instead of starting another run. */
  onEnded?: 'start-again' | 'result';
}

/** How long starting a workflow may take before the answer is 503: the SDK would otherwise retry for many seconds. */
const START_DEADLINE_MS = 10_000;

/** gRPC status codes of a server that did not answer: UNAVAILABLE, DEADLINE_EXCEEDED. */
const UNREACHABLE_CODES = [14, 4];

export function unreachable(error: unknown): boolean {
  const grpc = isGrpcServiceError(error)
    ? error
    : isGrpcServiceError((error as Error)?.cause)
      ? ((error as Error).cause as { code: number })
      : undefined;
  return grpc !== undefined && UNREACHABLE_CODES.includes(grpc.code);
}

/** Starts a run on the task queue within START_DEADLINE_MS. */
function start<W extends Workflow>(
  { client, taskQueue }: StartTarget,
  workflow: W,
  options: Record<string, unknown> & { workflowId: string; args: Parameters<W> },
): Promise<WorkflowHandle<W>> {
  // The SDK types args through a conditional type that generic callers cannot satisfy.
  const startOptions = { taskQueue, ...options } as unknown as WorkflowStartOptions<W>;
  return client.connection.withDeadline(Date.now() + START_DEADLINE_MS, () =>
    client.workflow.start(workflow, startOptions),
  );
}

/**
 * Starts a run the caller waits for, marked with whom it is for and what started it; the handle of the run an id
 * already has, as `onEnded` says.
 */
export async function startAttempt<W extends Workflow>(
  target: StartTarget,
  workflow: W,
  options: RunOptions<W>,
): Promise<WorkflowHandle<W>> {
  try {
    return await start(target, workflow, {
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
      return target.client.workflow.getHandle(options.workflowId);
    }
    if (unreachable(error)) throw new TemporalUnavailableError(error);
    throw error;
  }
}

/**
 * Starts a workflow that goes on without the caller (a sign-out's notices to clients): answers once Temporal has it,
 * never waits for its result.
 */
export async function startDetached<W extends Workflow>(
  target: StartTarget,
  workflow: W,
  options: { workflowId: string; args: Parameters<W>; userId: string },
): Promise<void> {
  try {
    await start(target, workflow, {
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
