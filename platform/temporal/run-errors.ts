/** How starting or waiting on a workflow fails, as the API's error handler tells them apart. */
export class AttemptInProgressError extends Error {
  constructor(readonly workflowId: string) {
    super(`another attempt (workflow ${workflowId}) is still running; retry when it has ended`);
  }
}

export class ResultDeadlineError extends Error {
  constructor(
    readonly workflowId: string,
    seconds: number,
  ) {
    super(
      `workflow ${workflowId} did not finish within ${seconds} s and keeps running; follow it in the Temporal UI or with ` +
        `\`temporal workflow describe --workflow-id ${workflowId}\`, or repeat the request with the same Idempotency-Key to wait for its answer`,
    );
  }
}

/** Temporal could not be reached, so nothing was started (or it is not known whether it was): the client retries later. */
export class TemporalUnavailableError extends Error {
  readonly retryAfterSeconds = 5;
  constructor(cause: unknown) {
    super(`the workflow service is unreachable (${(cause as Error)?.message ?? cause}); retry in a few seconds`);
  }
}
