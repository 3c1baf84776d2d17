import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { signingKeyRotation } from './workflows/signing-key-rotation';

/**
 * The rotation workflow's fixed id: one per task queue, which is one per cluster (its instances share the queue), so
 * the instances of a cluster find one another's run and clusters sharing a Temporal namespace do not.
 */
export const signingKeyRotationWorkflowId = (taskQueue: string) => `signing-key-rotation:${taskQueue}`;

/**
 * Starts the cluster's signing-key rotation (sign-in/workflows/signing-key-rotation.ts) unless it runs already: every
 * instance calls this at start, and all but the first find it running.
 */
export async function startSigningKeyRotation(client: Client, taskQueue: string): Promise<'started' | 'running'> {
  try {
    await client.workflow.start(signingKeyRotation, {
      workflowId: signingKeyRotationWorkflowId(taskQueue),
      taskQueue,
      args: [],
    });
    return 'started';
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError) return 'running';
    throw error;
  }
}
