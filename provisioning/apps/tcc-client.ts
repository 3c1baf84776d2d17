import { got, type Response } from 'got';
import type { ClientRequest } from 'node:http';
import type { LookupFunction } from 'node:net';
import { z } from 'zod';
import {
  assertCallableUrl,
  createGuardedAgents,
  ONE_ATTEMPT,
  RefusedAddressError,
  type AllowList,
} from '../../platform/security/callback-address';
import { safeStringMap } from '../../platform/security/object-keys';
import { storableText, textProblemMessage } from '../../platform/security/storable-text';
import { isReservedClaim, reservedClaimMessage } from '../../platform/security/reserved-claims';
import { CONFIRM_CANCEL_TIMEOUT_SECONDS, reasons, type TryVerdict } from '../tcc';
import type { ProvisioningApp } from './apps';
import { logger } from '../../platform/observability/logger';
import { tccCallDuration, tccCalls, type TccOutcome, type TccPhase } from '../../platform/observability/metrics';
import { FIELD_BOUNDS } from '../../platform/security/field-bounds';

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

export const tryResponseSchema = z.object({
  approved: z.boolean(),
  reason: z.string().optional(),
  organizationId: z.string().min(1).optional(),
  customAttributes: z.record(z.string(), z.string()).optional(),
});

export type { TryVerdict };

const answerTooLarge = () => new AppCallError(`answered more than ${MAX_ANSWER_BYTES / 1024} kB`);

/** An app's reason as the caller gets it: what the store can hold, at most MAX_REASON_LENGTH characters. */
function boundedReason(reason: string | undefined): string | undefined {
  if (reason === undefined) return undefined;
  const storable = storableText(reason);
  return storable.length > MAX_REASON_LENGTH ? `${storable.slice(0, MAX_REASON_LENGTH - 1)}…` : storable;
}

export class AppCallError extends Error {
  readonly code = 'APP_CALL_FAILED';
  constructor(
    message: string,
    /** No answer within the call's timeout. */
    readonly timedOut = false,
  ) {
    super(message);
  }
}

/** What an operator's probe of an app's Try endpoint reports. */
export interface TryProbe {
  verdict: TryVerdict;
  /** Absent when no HTTP answer came back (refused, unreachable, timed out). */
  status?: number;
  latencyMs: number;
}

export interface TccClient {
  try(app: ProvisioningApp, body: TryRequestBody): Promise<TryVerdict>;
  probe(app: ProvisioningApp, body: TryRequestBody): Promise<TryProbe>;
  confirm(app: ProvisioningApp, transactionId: string): Promise<void>;
  cancel(app: ProvisioningApp, transactionId: string): Promise<void>;
  deleteUser(app: ProvisioningApp, userId: string): Promise<void>;
  close(): void;
}

/**
 * The most of an answer that is read: a Try answer is a small JSON object, and an app (or whatever answers at its
 * address) must not make the worker hold an answer of any size. Larger is a failure naming the app.
 */
export const MAX_ANSWER_BYTES = 64 * 1024;
/** The most of an app's rejection reason that is kept: it travels to the caller, in histories and in logs. */
export const MAX_REASON_LENGTH = 500;
/** Bounds of what a Try answer may set, as the admin API's own (api/routes/profile.ts). */
const ANSWER_BOUNDS = {
  organizationId: FIELD_BOUNDS.id,
  attributeName: FIELD_BOUNDS.attributeName,
  attributeValue: FIELD_BOUNDS.attributeValue,
};

/** Error messages name what went wrong, never the request's headers (the key travels there). */
function appCallError(error: unknown): AppCallError {
  if (error instanceof AppCallError) return error;
  const e = error as { code?: string; message?: string; name?: string };
  if (e.name === 'TimeoutError' || e.code === 'ETIMEDOUT') return new AppCallError('timed out', true);
  if (error instanceof RefusedAddressError) return new AppCallError(`refused: ${e.message}`);
  return new AppCallError(`failed: ${e.message ?? String(error)}`);
}

/**
 * The app closed an idle kept-alive connection as the call went out on it, so no answer came: the race every HTTP
 * client with a connection pool meets (Node's docs retry such a request, Go's Transport one marked idempotent). Every
 * TCC call may be repeated (an app treats a repeat of its transactionId as the same call), so it is sent once more,
 * on a new connection. A reset on a new connection is the app's doing and stays a failure.
 */
function closedUnderRequest(error: unknown): boolean {
  const e = error as { code?: string; reusedSocket?: boolean; response?: unknown };
  return e.reusedSocket === true && e.response === undefined && (e.code === 'ECONNRESET' || e.code === 'EPIPE');
}

/** Counts a finished call to an app and its duration (the app id is configuration, never user data). */
function observeCall(app: ProvisioningApp, phase: TccPhase, outcome: TccOutcome, started: number): void {
  const labels = { app: app.appId, phase, outcome };
  tccCalls.inc(labels);
  tccCallDuration.observe(labels, (performance.now() - started) / 1000);
}

const failureOutcome = (error: unknown): TccOutcome =>
  error instanceof AppCallError && error.timedOut ? 'timeout' : 'error';

/**
 * Makes the Try/Confirm/Cancel/DELETE calls. Every call re-checks the callback address before connecting
 * and again at connect time (after DNS), never follows redirects, never retries an answer or a timeout (Temporal
 * decides that; only a kept-alive connection closed under the call is, see closedUnderRequest), and never puts the
 * key into an error message.
 */
export interface TccClientOptions {
  /** DNS resolver used at connect time; tests point names at loopback addresses with it. */
  dnsLookup?: LookupFunction;
  /** Where a dropped attribute of a Try answer is reported. */
  warn?: (message: string) => void;
}

export function createTccClient(allow: AllowList, options: TccClientOptions = {}): TccClient {
  const agents = createGuardedAgents(allow);
  const warn = options.warn ?? ((message: string) => logger.warn(`provisioning: ${message}`));

  async function send(
    app: ProvisioningApp,
    method: 'POST' | 'DELETE',
    path: string,
    json: unknown,
    timeoutMs: number,
  ): Promise<Response<string>> {
    try {
      const base = assertCallableUrl(app.callbackUrl, allow).href.replace(/\/+$/, '');
      const url = new URL(`${base}${path}`);
      // Repeats share the call's timeout: the workflow's limits count one call per app and phase.
      const deadline = Date.now() + timeoutMs;
      const sendOnce = () => {
        let reusedSocket = false;
        let tooLarge = false;
        const pending = got(url, {
          method,
          json,
          headers: { authorization: `Bearer ${app.apiKey}` },
          agent: agents.forUrl(url),
          dnsLookup: options.dnsLookup,
          timeout: { request: Math.max(1, deadline - Date.now()) },
          ...ONE_ATTEMPT,
          responseType: 'text',
        });
        void pending.on('request', (request: ClientRequest) => (reusedSocket = request.reusedSocket));
        void pending.on('downloadProgress', ({ transferred }: { transferred: number }) => {
          if (transferred <= MAX_ANSWER_BYTES || tooLarge) return;
          tooLarge = true;
          pending.cancel();
        });
        return pending.then(
          (response) => {
            if (response.body.length > MAX_ANSWER_BYTES) throw answerTooLarge();
            return response;
          },
          (error: unknown) => {
            if (tooLarge) throw answerTooLarge();
            throw Object.assign(error as Error, { reusedSocket });
          },
        );
      };
      for (;;) {
        try {
          return await sendOnce();
        } catch (error) {
          // Each closed connection leaves the pool, so this ends on a new connection at the latest.
          if (!closedUnderRequest(error)) throw error;
          logger.debug(`provisioning: app ${app.appId} closed a kept-alive connection under ${path}; sent again`);
        }
      }
    } catch (error) {
      throw appCallError(error);
    }
  }

  /** Confirm, Cancel and DELETE: any 2xx answer is success. */
  async function call(app: ProvisioningApp, phase: TccPhase, method: 'POST' | 'DELETE', path: string, json: unknown) {
    const started = performance.now();
    const timeoutMs = phase === 'delete' ? DEPROVISION_TIMEOUT_MS : CONFIRM_CANCEL_TIMEOUT_MS;
    try {
      const response = await send(app, method, path, json, timeoutMs);
      if (response.statusCode < 200 || response.statusCode >= 300)
        throw new AppCallError(`answered HTTP ${response.statusCode}`);
      observeCall(app, phase, 'ok', started);
    } catch (error) {
      observeCall(app, phase, failureOutcome(error), started);
      throw error;
    }
  }

  /** What in an approval the store could not hold, named for the refusal; undefined when all of it fits. */
  function unstorable(verdict: { organizationId?: string; customAttributes?: Record<string, string> }) {
    /** What the store cannot hold in one value: its text, or its length past the field's bound. */
    const problemOf = (text: string, max: number) =>
      textProblemMessage(text) ?? (text.length > max ? `is longer than ${max} characters` : undefined);
    const { organizationId, customAttributes = {} } = verdict;
    const organization = organizationId && problemOf(organizationId, ANSWER_BOUNDS.organizationId);
    if (organization) return `organizationId ${organization}`;
    for (const [name, value] of Object.entries(customAttributes)) {
      const nameProblem = problemOf(name, ANSWER_BOUNDS.attributeName);
      if (nameProblem) return `a customAttributes name ${nameProblem}`;
      const valueProblem = problemOf(value, ANSWER_BOUNDS.attributeValue);
      if (valueProblem) return `customAttributes.${name} ${valueProblem}`;
    }
    return undefined;
  }

  function interpretTry(app: ProvisioningApp, response: Response<string>): TryVerdict {
    if (response.statusCode < 200 || response.statusCode >= 300) {
      return { approved: false, reason: reasons.tryFailed(app.appId, `answered HTTP ${response.statusCode}`) };
    }
    let parsed;
    try {
      const body = JSON.parse(response.body) as { customAttributes?: unknown } | null;
      const attributes = body?.customAttributes;
      // Only a map is read as one (an array would become {"0": …}); anything else fails the Try response's shape.
      if (attributes && typeof attributes === 'object' && !Array.isArray(attributes)) {
        // Names no attribute may have (a prototype's) and names of claims the service sets itself are dropped.
        body.customAttributes = safeStringMap(
          attributes as Record<string, string>,
          (key, reason) =>
            warn(
              reason
                ? `app ${app.appId} answered Try with the attribute "${key}": ${reason}; it was dropped`
                : `app ${app.appId} answered Try with the attribute name "${key}", which is not allowed; it was dropped`,
            ),
          (key) => (isReservedClaim(key) ? reservedClaimMessage(key) : undefined),
        );
      }
      parsed = tryResponseSchema.safeParse(body);
    } catch {
      parsed = undefined;
    }
    if (!parsed?.success)
      return { approved: false, reason: reasons.tryFailed(app.appId, 'answered a body that is not a Try response') };
    const { approved, reason, organizationId, customAttributes } = parsed.data;
    if (!approved)
      return {
        approved: false,
        reason: boundedReason(reason) ?? reasons.rejectedWithoutReason(app.appId),
      };
    // An approval the store cannot hold is a refusal now, naming the app and the field, not a write retried forever.
    const problem = unstorable({ organizationId, customAttributes });
    if (problem) return { approved: false, reason: reasons.unstorableApproval(app.appId, problem) };
    return { approved: true, organizationId, customAttributes };
  }

  async function probe(app: ProvisioningApp, body: TryRequestBody): Promise<TryProbe> {
    const started = performance.now();
    const latency = () => Math.round((performance.now() - started) * 10) / 10;
    try {
      const response = await send(app, 'POST', '/try', body, app.tryTimeoutSeconds * 1000);
      const verdict = interpretTry(app, response);
      const answered = response.statusCode >= 200 && response.statusCode < 300;
      observeCall(app, 'try', verdict.approved ? 'approved' : answered ? 'rejected' : 'error', started);
      return { verdict, status: response.statusCode, latencyMs: latency() };
    } catch (error) {
      observeCall(app, 'try', failureOutcome(error), started);
      return {
        verdict: { approved: false, reason: reasons.tryFailed(app.appId, (error as Error).message) },
        latencyMs: latency(),
      };
    }
  }

  return {
    try: async (app, body) => (await probe(app, body)).verdict,
    probe,
    confirm: (app, transactionId) => call(app, 'confirm', 'POST', '/confirm', { transactionId }),
    cancel: (app, transactionId) => call(app, 'cancel', 'POST', '/cancel', { transactionId }),
    deleteUser: (app, userId) => call(app, 'delete', 'DELETE', `/users/${encodeURIComponent(userId)}`, undefined),
    close: () => agents.destroy(),
  };
}
