import { randomUUID } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import type { Logger } from './logger';
import { httpRequestDuration, httpRequests } from './metrics';

declare module 'express-serve-static-core' {
  interface Request {
    /** The request's logger: every line carries its request id. */
    log: Logger;
    /** X-Request-Id as the caller sent it (when well formed), or one made for this request. */
    requestId: string;
  }
}

/** An id a caller or a proxy may hand in: short, and nothing a log reader's terminal would interpret. */
const GIVEN_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The first middleware of the API: a request id (taken from X-Request-Id or made, and sent back), a logger carrying
 * it, and when the answer is sent, one access-log line and the request metrics. The line names the route template
 * (`routeOf`, which the API knows), never the query string (sign-in codes and SCIM filters travel there).
 */
export function requestObservability(base: Logger, routeOf: (req: Request) => string): RequestHandler {
  // The access line holds only fields the service made or checked (the request id, the method, the route template,
  // the status, the duration), never a value a secret could travel in, so it skips the redaction every other line
  // goes through: with the service's redaction paths a line cost about ten times as much to write (docs/benchmarks.md).
  const access = base.child({}, { redact: { paths: [] } });
  return (req, res, next) => {
    const given = req.get('x-request-id');
    req.requestId = given && GIVEN_ID.test(given) ? given : randomUUID();
    res.setHeader('X-Request-Id', req.requestId);
    // Made when a line is first logged through it (a failure, mostly): a child logger redacts its bindings when it is
    // made, about 50 µs, which most requests never need.
    const settle = (log: Logger) =>
      Object.defineProperty(req, 'log', { value: log, configurable: true, enumerable: true, writable: true });
    Object.defineProperty(req, 'log', {
      configurable: true,
      enumerable: true,
      get: () => settle(base.child({ reqId: req.requestId })).log,
      set: settle,
    });
    const started = process.hrtime.bigint();
    res.once('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = routeOf(req);
      const labels = { method: req.method, route, status: String(res.statusCode) };
      httpRequests.inc(labels);
      httpRequestDuration.observe(labels, seconds);
      const level = res.statusCode >= 500 ? 'error' : res.statusCode >= 400 ? 'warn' : 'info';
      access[level](
        {
          reqId: req.requestId,
          method: req.method,
          route,
          status: res.statusCode,
          durationMs: Math.round(seconds * 10_000) / 10,
        },
        `${req.method} ${route} ${res.statusCode}`,
      );
    });
    next();
  };
}
