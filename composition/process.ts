import { ConfigError } from '../platform/config/load';
import type { AppConfig } from '../platform/config/config-schema';
import { requireKeyRing, requirePayloadKeyRing } from '../platform/config/key-ring';
import { flushLogs, logger } from '../platform/observability/logger';
import { markShuttingDown } from '../platform/observability/shutdown';

/** Names a list as a sentence does: "a", "a and b", "a, b and c". */
const listed = (parts: string[]) => parts.slice(0, -1).join(', ') + (parts.length > 1 ? ' and ' : '') + parts.at(-1);

/**
 * Runs an entry point: configuration errors print as one clear message, signals shut down cleanly. Its shutdown may
 * return what it stopped, in the order it stopped them; a stop ends with one line naming them.
 */
export function runMain(name: string, main: () => Promise<() => Promise<string[] | void>>): void {
  main()
    .then((shutdown) => {
      let stopping = false;
      const stop = (signal: string) => {
        if (stopping) return;
        stopping = true;
        markShuttingDown();
        logger.debug(`${name}: ${signal} received, shutting down`);
        shutdown()
          .then((stopped) => {
            logger.info(`${name}: stopped${stopped?.length ? ` ${listed(stopped)}` : ''} (${signal})`);
            return flushLogs().then(() => process.exit(0));
          })
          .catch((error) => {
            logger.error({ err: error }, `${name}: shutdown failed`);
            void flushLogs().then(() => process.exit(1));
          });
      };
      process.on('SIGINT', () => stop('SIGINT'));
      process.on('SIGTERM', () => stop('SIGTERM'));
      // The terminal went away: stop as cleanly, so no embedded server is left running without its parent.
      process.on('SIGHUP', () => stop('SIGHUP'));
    })
    .catch((error) => {
      logger.error(
        `${name}: ${error instanceof ConfigError ? error.message : String((error as Error)?.stack ?? error)}`,
      );
      void flushLogs().then(() => process.exit(1));
    });
}

export function required(value: string | undefined, what: string): string {
  if (!value) throw new ConfigError(what);
  return value;
}

/**
 * What the API or the worker needs when it runs on its own (`npm run api`, `npm run worker`): an external store and
 * Temporal, the data-protection key ring for the secrets that store holds, and the payload keys for Temporal.
 */
export function standaloneSettings(
  config: AppConfig,
  name: 'API' | 'worker',
): { databaseUrl: string; temporalAddress: string } {
  const databaseUrl = required(
    config.Database.Url,
    `the ${name} alone needs DATABASE_URL (or Database:Url); \`npm start\` runs everything embedded`,
  );
  const temporalAddress = required(
    config.Temporal.Address,
    `the ${name} alone needs TEMPORAL_ADDRESS (or Temporal:Address); \`npm start\` runs everything embedded`,
  );
  requireKeyRing(config);
  requirePayloadKeyRing(config);
  return { databaseUrl, temporalAddress };
}
