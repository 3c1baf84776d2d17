import type { Kysely } from 'kysely';
import type { AppConfig } from '../platform/config/config-schema';
import { logger } from '../platform/observability/logger';
import { createReadThrough, type ReadThrough } from '../migration/read-through';
import { connectSource } from '../migration/source/connection';
import type { SourceDatabase } from '../migration/source/source-schema';
import type { ServiceContext } from './service-context';

/**
 * The cutover's read-through window for the API, when Migration:ReadThrough:Until is set and still ahead: the source
 * over Migration:ReadThrough:ConnectionString (a read-only login is the safe choice) or else the migration's own.
 * Nothing when the window is not configured, is over, or lacks what it needs (each said at start).
 */
export function readThroughWindow(
  config: AppConfig,
  context: Pick<ServiceContext, 'db' | 'dataProtection' | 'sourceDataProtection'>,
): { readThrough?: ReadThrough; close: () => Promise<void> } {
  const none = { close: () => Promise.resolve() };
  const { Until, ConnectionString, TimeoutSeconds, PoolSize, PermitLimit, WindowSeconds, RetryAfterSeconds } =
    config.Migration.ReadThrough;
  if (!Until) return none;
  if (Until.getTime() <= Date.now()) {
    logger.info(`api: the read-through window closed at ${Until.toISOString()}; the source is not read`);
    return none;
  }
  if (!context.dataProtection) {
    logger.warn(
      'api: Migration:ReadThrough:Until is set, but without DataProtection:Keys nothing read through can be sealed; the window stays shut',
    );
    return none;
  }
  // The window's own connections, whichever login: its queries are bounded in time and number, the migration's not.
  const connectionString = ConnectionString ?? config.Migration.Source.ConnectionString;
  const source: Kysely<SourceDatabase> | undefined = connectionString
    ? connectSource(connectionString, PoolSize, TimeoutSeconds * 1000).db
    : undefined;
  if (!source) {
    logger.warn(
      'api: Migration:ReadThrough:Until is set, but neither Migration:ReadThrough:ConnectionString nor Migration:Source:ConnectionString is; the window stays shut',
    );
    return none;
  }
  logger.info(`api: reading refresh tokens and users through from the source until ${Until.toISOString()}`);
  return {
    readThrough: createReadThrough({
      target: context.db,
      source,
      until: Until,
      dataProtection: context.dataProtection,
      sourceDataProtection: context.sourceDataProtection,
      budget: { permitLimit: PermitLimit, windowSeconds: WindowSeconds },
      timeoutMs: TimeoutSeconds * 1000,
      retryAfterSeconds: RetryAfterSeconds,
      unavailableMessage: config.Migration.ReadThrough.UnavailableMessage,
    }),
    close: () => source.destroy(),
  };
}
