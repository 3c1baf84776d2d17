import { ApplicationFailure, Context } from '@temporalio/activity';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import { isStoreDataError } from '../platform/store/errors';
import { logger } from '../platform/observability/logger';

/** From this attempt on, a step that keeps failing is logged as an error an operator should look at. */
export const ALERT_AFTER_ATTEMPTS = 10;

/**
 * Store writes are retried until they land (workflows/activity-policies.ts), which is right for a store that is away
 * and wrong for data it can never hold: PostgreSQL's data exceptions and integrity violations (SQLSTATE classes 22
 * and 23, store/errors.ts) fail the same way every time. Such a failure ends the step at once as non-retryable, so the
 * attempt ends with an outcome instead of retrying without end; its message names the SQLSTATE and PostgreSQL's
 * words, with any quoted value left out. Any other failure that keeps coming back is logged as an error from the tenth attempt on
 * (then every tenth), the alert for a step whose retries have no bound.
 */
export class StoreFaultsInterceptor implements ActivityInboundCallsInterceptor {
  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    try {
      return await next(input);
    } catch (error) {
      const info = Context.current().info;
      if (isStoreDataError(error)) {
        const { code, message } = error as { code: string; message: string };
        // PostgreSQL quotes the offending value in some messages (`invalid input syntax for type uuid: "…"`).
        const withoutValues = message.replace(/"[^"]*"/g, '"…"');
        throw ApplicationFailure.nonRetryable(
          `${info.activityType}: the store refused the data (SQLSTATE ${code}: ${withoutValues})`,
          'StoreRefusedData',
        );
      }
      if (info.attempt >= ALERT_AFTER_ATTEMPTS && info.attempt % ALERT_AFTER_ATTEMPTS === 0)
        logger.error(
          `${info.activityType} of workflow ${info.workflowExecution?.workflowId ?? '?'} has failed ${info.attempt} times and is retried: ${(error as Error).message}`,
        );
      throw error;
    }
  }
}
