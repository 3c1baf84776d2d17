import { createGuardedAgents, type AllowList } from '../../platform/security/callback-address';
import type { LookupFunction } from 'node:net';
import { CONFIRM_CANCEL_TIMEOUT_SECONDS, reasons, type TryVerdict } from '../tcc';
import type { ProvisioningApp } from './app-providers';
import { logger } from '../../platform/observability/logger';
import {
  tccCallDuration,
  tccCalls,
  tccProbeCallDuration,
  tccProbeCalls,
  type TccOutcome,
  type TccPhase,
} from '../../platform/observability/metrics';
import { AppCallError, send, type TccTransport } from './tcc-transport';
import { interpretTry } from './tcc-try-answer';

/** The spec's fixed 10 s, named once for the workflows' activity policies and for the HTTP calls here. */
const CONFIRM_CANCEL_TIMEOUT_MS = CONFIRM_CANCEL_TIMEOUT_SECONDS * 1000;
/** The spec names no timeout for the deprovisioning DELETE; it gets the Confirm/Cancel one. */
const DEPROVISION_TIMEOUT_MS = CONFIRM_CANCEL_TIMEOUT_MS;

export interface TryRequestBody {
  transactionId: string;
  userId: string;
  email: string;
  firstName?: string;
  lastName?: string;
  organizationId?: string;
  customAttributes?: Record<string, string>;
}

export type { TryVerdict };

/** What an operator's probe of an app's Try endpoint reports. */
export interface TryProbe {
  verdict: TryVerdict;
  /** Absent when no HTTP answer came back (refused, unreachable, timed out). */
  status?: number;
  latencyMs: number;
  /** Whether the Cancel of an approved probe went through (false when Try did not approve). */
  cancelled: boolean;
}

export interface TccClient {
  try(app: ProvisioningApp, body: TryRequestBody): Promise<TryVerdict>;
  /** Try, then Cancel when approved; counted apart from provisioning's calls (tcc_probe_calls_total). */
  probe(app: ProvisioningApp, body: TryRequestBody): Promise<TryProbe>;
  confirm(app: ProvisioningApp, transactionId: string): Promise<void>;
  cancel(app: ProvisioningApp, transactionId: string): Promise<void>;
  deleteUser(app: ProvisioningApp, userId: string): Promise<void>;
  close(): void;
}

/** Where a call is counted: provisioning's own calls, or an operator's probe. */
type Meter = 'provisioning' | 'probe';
const METERS = {
  provisioning: { calls: tccCalls, duration: tccCallDuration },
  probe: { calls: tccProbeCalls, duration: tccProbeCallDuration },
};

/** Counts a finished call to an app and its duration (the app id is configuration, never user data). */
function observeCall(meter: Meter, app: ProvisioningApp, phase: TccPhase, outcome: TccOutcome, started: number) {
  const labels = { app: app.appId, phase, outcome };
  METERS[meter].calls.inc(labels);
  METERS[meter].duration.observe(labels, (performance.now() - started) / 1000);
}

const failureOutcome = (error: unknown): TccOutcome =>
  error instanceof AppCallError && error.timedOut ? 'timeout' : 'error';

export interface TccClientOptions {
  /** DNS resolver used at connect time; tests point names at loopback addresses with it. */
  dnsLookup?: LookupFunction;
  /** Where a dropped attribute of a Try answer is reported. */
  warn?: (message: string) => void;
}

/** Confirm, Cancel and DELETE: any 2xx answer is success. */
async function call(
  transport: TccTransport,
  app: ProvisioningApp,
  phase: TccPhase,
  request: { method: 'POST' | 'DELETE'; path: string; json: unknown },
  meter: Meter = 'provisioning',
): Promise<void> {
  const started = performance.now();
  const timeoutMs = phase === 'delete' ? DEPROVISION_TIMEOUT_MS : CONFIRM_CANCEL_TIMEOUT_MS;
  try {
    const response = await send(transport, app, { ...request, timeoutMs });
    if (response.statusCode < 200 || response.statusCode >= 300)
      throw new AppCallError(`answered HTTP ${response.statusCode}`);
    observeCall(meter, app, phase, 'ok', started);
  } catch (error) {
    observeCall(meter, app, phase, failureOutcome(error), started);
    throw error;
  }
}

/** Try, with what an operator's probe also wants: the status and the latency. A failure is a refusal. */
async function tryCall(
  transport: TccTransport,
  warn: (message: string) => void,
  app: ProvisioningApp,
  body: TryRequestBody,
  meter: Meter,
): Promise<Omit<TryProbe, 'cancelled'>> {
  const started = performance.now();
  const latency = () => Math.round((performance.now() - started) * 10) / 10;
  try {
    const response = await send(transport, app, {
      method: 'POST',
      path: '/try',
      json: body,
      timeoutMs: app.tryTimeoutSeconds * 1000,
    });
    const verdict = interpretTry(app, response, warn);
    const answered = response.statusCode >= 200 && response.statusCode < 300;
    observeCall(meter, app, 'try', verdict.approved ? 'approved' : answered ? 'rejected' : 'error', started);
    return { verdict, status: response.statusCode, latencyMs: latency() };
  } catch (error) {
    observeCall(meter, app, 'try', failureOutcome(error), started);
    return {
      verdict: { approved: false, reason: reasons.tryFailed(app.appId, (error as Error).message) },
      latencyMs: latency(),
    };
  }
}

/**
 * Makes the Try/Confirm/Cancel/DELETE calls. Every call re-checks the callback address before connecting
 * and again at connect time (after DNS), never follows redirects, never retries an answer or a timeout (Temporal
 * decides that; only a kept-alive connection closed under the call is, see tcc-transport.ts), and never puts the
 * key into an error message.
 */
export function createTccClient(allow: AllowList, options: TccClientOptions = {}): TccClient {
  const transport: TccTransport = { allow, agents: createGuardedAgents(allow), dnsLookup: options.dnsLookup };
  const warn = options.warn ?? ((message: string) => logger.warn(`provisioning: ${message}`));
  return {
    try: async (app, body) => (await tryCall(transport, warn, app, body, 'provisioning')).verdict,
    probe: async (app, body) => {
      const tried = await tryCall(transport, warn, app, body, 'probe');
      if (!tried.verdict.approved) return { ...tried, cancelled: false };
      const cancel = { method: 'POST' as const, path: '/cancel', json: { transactionId: body.transactionId } };
      const cancelled = await call(transport, app, 'cancel', cancel, 'probe').then(
        () => true,
        () => false,
      );
      return { ...tried, cancelled };
    },
    confirm: (app, transactionId) =>
      call(transport, app, 'confirm', { method: 'POST', path: '/confirm', json: { transactionId } }),
    cancel: (app, transactionId) =>
      call(transport, app, 'cancel', { method: 'POST', path: '/cancel', json: { transactionId } }),
    deleteUser: (app, userId) =>
      call(transport, app, 'delete', {
        method: 'DELETE',
        path: `/users/${encodeURIComponent(userId)}`,
        json: undefined,
      }),
    close: () => transport.agents.destroy(),
  };
}
