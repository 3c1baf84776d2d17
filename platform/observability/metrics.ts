import { collectDefaultMetrics, Counter, Histogram, register } from 'prom-client';

/**
 * Every metric the service exports, named once. Labels hold routes, app ids, passes, triggers and outcomes: values
 * from the service's own configuration and code, never a user's id, e-mail or anything else a request carries.
 */
collectDefaultMetrics();

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export const httpRequests = new Counter({
  name: 'http_requests_total',
  help: 'HTTP requests answered, by method, route template and status',
  labelNames: ['method', 'route', 'status'] as const,
});

export const httpRequestDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'Time from a request arriving to its answer being sent, by method, route template and status',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: LATENCY_BUCKETS,
});

export const provisioningAttempts = new Counter({
  name: 'provisioning_attempts_total',
  help: 'Provisioning attempts whose answer the API received, by trigger and outcome (provisioned, rejected, ...)',
  labelNames: ['trigger', 'outcome'] as const,
});

export type TccPhase = 'try' | 'confirm' | 'cancel' | 'delete';
/** approved and rejected are Try's verdicts; ok is any other call's 2xx; timeout and error are calls that failed. */
export type TccOutcome = 'approved' | 'rejected' | 'ok' | 'timeout' | 'error';

export const tccCalls = new Counter({
  name: 'tcc_calls_total',
  help: 'Calls to provisioning apps, by app, phase (try, confirm, cancel, delete) and outcome',
  labelNames: ['app', 'phase', 'outcome'] as const,
});

export const tccCallDuration = new Histogram({
  name: 'tcc_call_duration_seconds',
  help: 'Duration of calls to provisioning apps, by app, phase and outcome',
  labelNames: ['app', 'phase', 'outcome'] as const,
  buckets: LATENCY_BUCKETS,
});

/**
 * An operator's probe of an app (`POST /api/v1/provisioning/apps/{appId}/test`): its Try and the Cancel of an approved
 * probe, apart from tcc_calls_total so that the probes never count as provisioning traffic.
 */
export const tccProbeCalls = new Counter({
  name: 'tcc_probe_calls_total',
  help: "Calls of operators' probes to provisioning apps, by app, phase (try, cancel) and outcome",
  labelNames: ['app', 'phase', 'outcome'] as const,
});

export const tccProbeCallDuration = new Histogram({
  name: 'tcc_probe_call_duration_seconds',
  help: "Duration of operators' probe calls to provisioning apps, by app, phase and outcome",
  labelNames: ['app', 'phase', 'outcome'] as const,
  buckets: LATENCY_BUCKETS,
});

export const deprovisioningRetries = new Counter({
  name: 'deprovisioning_retries_total',
  help: 'Deprovisioning DELETE calls made again after an earlier attempt failed, by app',
  labelNames: ['app'] as const,
});

export const migrationRows = new Counter({
  name: 'migration_rows_total',
  help: 'Rows the migration read from the source and wrote (created or updated) in the target, by pass',
  labelNames: ['pass', 'direction'] as const,
});

export const auditEvents = new Counter({
  name: 'audit_events_total',
  help: 'Account events recorded in the audit trail, by type (sign-in-failed, locked-out, password-reset-completed, ...)',
  labelNames: ['type'] as const,
});

export const mailsSent = new Counter({
  name: 'mails_sent_total',
  help: 'Mails the service sent or wrote to its outbox, by kind (password-reset, email-confirmation, ...) and outcome',
  labelNames: ['kind', 'outcome'] as const,
});

export const metricsRegistry = register;

export const logoutDeliveries = new Counter({
  name: 'backchannel_logout_deliveries_total',
  help: 'Back-channel logout tokens sent to clients, by client and outcome (delivered, retried, gave-up, skipped)',
  labelNames: ['client', 'outcome'] as const,
});

export const sourceSessions = new Counter({
  name: 'source_sessions_total',
  help: "Browsers that came with the source's authentication cookie while Migration:SourceSessions:Until was ahead, by outcome (carried-over, or why not: expired, unreadable, unknown-key, not-a-ticket, no-subject, unknown-user, tombstoned, inactive, stamp-changed, signed-out)",
  labelNames: ['outcome'] as const,
});

export const readThroughs = new Counter({
  name: 'read_through_total',
  help: 'Look-ups in the source during the read-through window, by kind (refresh-token, user) and outcome (adopted, migrated, not-found, or why a token was not carried over)',
  labelNames: ['kind', 'outcome'] as const,
});
