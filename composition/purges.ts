import type { AppConfig } from '../platform/config/config-schema';
import type { Db } from '../platform/store/database';
import { logger } from '../platform/observability/logger';
import { purgeExpiredIdempotencyKeys } from '../platform/store/idempotency-keys';
import { purgeExpiredOidcPayloads } from '../platform/store/oidc-payloads';
import { purgeExpiredHits } from '../platform/store/rate-limits';
import { purgeOldRemovals } from '../platform/store/user-removals';
import { purgeAbandonedCredentials } from '../provisioning/store/pending-credentials';
import { purgeDeadReservations } from '../provisioning/creation';
import type { WorkflowRunner } from '../provisioning/workflow-runner';
import { purgeSignInAttempts } from '../sign-in/store/sign-in-users';
import { purgeRevokedAccessTokens } from '../sign-in/store/admin-tokens';
import { purgeAccountTokens } from '../sign-in/store/account-tokens';
import { purgeAuditEvents } from '../sign-in/store/audit-events';
import { purgeSessionDevices } from '../sign-in/store/session-devices';

/** How often the API clears out the rows of the retention table. */
export const PURGE_INTERVAL_MS = 3600_000;

/** A kind of row kept only for a while: what it is (for the log line) and the query that clears what is past its time. */
export interface Purge {
  what: string;
  purge: (db: Db) => Promise<unknown>;
}

/** What the API clears out every PURGE_INTERVAL_MS, each table with its own retention. */
export const retentionTable = (config: AppConfig, run: WorkflowRunner): Purge[] => [
  { what: 'abandoned credentials', purge: purgeAbandonedCredentials },
  { what: 'e-mail reservations of ended attempts', purge: (db) => purgeDeadReservations(db, run) },
  { what: 'expired idempotency keys', purge: purgeExpiredIdempotencyKeys },
  { what: 'expired sign-in artefacts', purge: purgeExpiredOidcPayloads },
  { what: 'devices of ended sessions', purge: purgeSessionDevices },
  {
    what: 'counted sign-in attempts',
    purge: (db) => purgeSignInAttempts(db, config.Auth.SignInRateLimit.WindowSeconds),
  },
  { what: 'counted requests past their window', purge: purgeExpiredHits },
  { what: 'old removal answers', purge: purgeOldRemovals },
  { what: 'revocations of expired access tokens', purge: purgeRevokedAccessTokens },
  { what: 'old account links', purge: purgeAccountTokens },
  { what: 'audit events past Audit:RetentionDays', purge: (db) => purgeAuditEvents(db, config.Audit.RetentionDays) },
];

/**
 * What is cleared once at start, before the API answers and an hour before the timer's first tick: password hashes
 * stashed for attempts that ended or never started a day ago or more (ABANDONED_AFTER_HOURS).
 */
export const purgeAtStart = (db: Db) => purgeAbandonedCredentials(db);

/**
 * The one timer that runs the whole retention table every PURGE_INTERVAL_MS. A purge that fails is logged and tried
 * again at the next tick. Returns the function that stops the timer.
 */
export function startRetention(config: AppConfig, db: Db, run: WorkflowRunner): () => void {
  const table = retentionTable(config, run);
  const timer = setInterval(() => {
    for (const { what, purge } of table)
      purge(db).catch((error: Error) => logger.warn(`api: purging ${what} failed: ${error.message}`));
  }, PURGE_INTERVAL_MS).unref();
  return () => clearInterval(timer);
}
