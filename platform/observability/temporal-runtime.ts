import { DefaultLogger, Runtime } from '@temporalio/worker';
import type { AppConfig } from '../config/config-schema';
import { logger } from './logger';
import { shuttingDown } from './shutdown';

/**
 * The SDK's INFO lines are routine (each worker's state changes, the workflow bundle's multi-line webpack report): at
 * the service's info level they would scroll start-up's own lines away, so they show with LOG_LEVEL=debug.
 */
const PINO_LEVEL = { TRACE: 'trace', DEBUG: 'debug', INFO: 'debug', WARN: 'warn', ERROR: 'error' } as const;

/**
 * Installs the Temporal SDK's runtime once per process, before any worker or native connection exists: the SDK's
 * and its core's log lines go through the service's logger (so they are JSON lines, redacted, like every other), and
 * its worker metrics are served in Prometheus' format on Metrics:TemporalPort when that is set (the SDK's core runs
 * that endpoint itself, so it is a second port beside Metrics:Port).
 */
export function installTemporalRuntime(config: AppConfig): void {
  const { Host, TemporalPort } = config.Metrics;
  Runtime.install({
    // The entry points stop on SIGINT and SIGTERM themselves (composition/process.ts: workers, API, embedded servers
    // in order, then exit 0); the SDK's own handling would stop the workers behind their back and re-raise the
    // signal, so a requested stop would end with status 130.
    shutdownSignals: [],
    // While the process stops on request, an activity under way fails as its connections are cut (Ctrl-C stops the
    // embedded PostgreSQL with the rest): the SDK's warning of it is expected then, and shows at debug.
    logger: new DefaultLogger('INFO', (entry) =>
      logger[entry.level === 'WARN' && shuttingDown() ? 'debug' : PINO_LEVEL[entry.level]](
        { ...entry.meta, sdk: 'temporal' },
        entry.message,
      ),
    ),
    telemetryOptions: {
      logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} },
      ...(TemporalPort !== undefined && {
        metrics: { prometheus: { bindAddress: `${Host.includes(':') ? `[${Host}]` : Host}:${TemporalPort}` } },
      }),
    },
  });
  if (TemporalPort !== undefined) logger.info(`temporal: worker metrics on http://${Host}:${TemporalPort}/metrics`);
}
