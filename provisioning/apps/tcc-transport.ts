import { got, type Response } from 'got';
import type { ClientRequest } from 'node:http';
import type { LookupFunction } from 'node:net';
import {
  assertCallableUrl,
  ONE_ATTEMPT,
  RefusedAddressError,
  type AllowList,
  type GuardedAgents,
} from '../../platform/security/callback-address';
import { logger } from '../../platform/observability/logger';
import type { ProvisioningApp } from './app-providers';

/**
 * The most of an answer that is read: a Try answer is a small JSON object, and an app (or whatever answers at its
 * address) must not make the worker hold an answer of any size. Larger is a failure naming the app.
 */
export const MAX_ANSWER_BYTES = 64 * 1024;

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

/** What every call to an app goes out through: the allowed addresses, the guarded agents and the resolver. */
export interface TccTransport {
  allow: AllowList;
  agents: GuardedAgents;
  /** DNS resolver used at connect time; tests point names at loopback addresses with it. */
  dnsLookup?: LookupFunction;
}

const answerTooLarge = () => new AppCallError(`answered more than ${MAX_ANSWER_BYTES / 1024} kB`);

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

/** One request, read up to MAX_ANSWER_BYTES; a failure says whether it went out on a kept-alive connection. */
function sendOnce(
  { agents, dnsLookup }: TccTransport,
  request: { app: ProvisioningApp; method: 'POST' | 'DELETE'; url: URL; json: unknown; deadline: number },
): Promise<Response<string>> {
  const { app, method, url, json, deadline } = request;
  let reusedSocket = false;
  let tooLarge = false;
  const pending = got(url, {
    method,
    json,
    headers: { authorization: `Bearer ${app.apiKey}` },
    agent: agents.forUrl(url),
    dnsLookup,
    timeout: { request: Math.max(1, deadline - Date.now()) },
    ...ONE_ATTEMPT,
    responseType: 'text',
  });
  void pending.on('request', (sent: ClientRequest) => (reusedSocket = sent.reusedSocket));
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
}

/**
 * A call to `path` under the app's callback URL, its address checked first (and again at connect time by the
 * agents). Fails with an AppCallError; an answer of any status is returned.
 */
export async function send(
  transport: TccTransport,
  app: ProvisioningApp,
  request: { method: 'POST' | 'DELETE'; path: string; json: unknown; timeoutMs: number },
): Promise<Response<string>> {
  const { method, path, json, timeoutMs } = request;
  try {
    const base = assertCallableUrl(app.callbackUrl, transport.allow).href.replace(/\/+$/, '');
    const url = new URL(`${base}${path}`);
    // Repeats share the call's timeout: the workflow's limits count one call per app and phase.
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        return await sendOnce(transport, { app, method, url, json, deadline });
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
