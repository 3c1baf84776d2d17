import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';

/**
 * Workers log through the Temporal runtime's logger. Every test file installs one (jest `setupFiles`, before any
 * worker or connection exists) that keeps each entry, so a test can assert that a failure was logged;
 * TEST_LOG=1 also prints warnings and errors.
 */
export const logEntries: LogEntry[] = [];

// The service's own logger (observability/logger.ts) stays quiet in tests unless TEST_LOG=1; tests that assert a line
// spy on it or read a spawned process's output.
process.env.LOG_LEVEL ??= process.env.TEST_LOG === '1' ? 'info' : 'silent';

Runtime.install({
  logger: new DefaultLogger('INFO', (entry) => {
    logEntries.push(entry);
    if (process.env.TEST_LOG === '1' && (entry.level === 'WARN' || entry.level === 'ERROR'))
      console.warn(`[${entry.level}] ${entry.message}`, entry.meta ?? '');
  }),
});
