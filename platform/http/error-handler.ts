import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { ErrorRequestHandler } from 'express';
import { AttemptInProgressError, ResultDeadlineError, TemporalUnavailableError } from '../temporal/run-errors';
import { z } from 'zod';
import { sendError, validationProblem, type ErrorAnswer } from './problem';
import { isStoreUnavailable } from '../store/errors';

/** How soon a client may send again after the store was out of reach: the pool replaces a dropped connection at once. */
const STORE_RETRY_AFTER_SECONDS = 5;

/** What body-parser and http-errors put on the errors they raise. */
type ParserError = Error & { type?: string; limit?: number; status?: number };

/** A workflow that ended because the store refused its data (workers/store-faults.ts): the request's fault, not ours. */
function storeRefusedData(caught: unknown): boolean {
  if (!(caught instanceof WorkflowFailedError)) return false;
  let cause: unknown = caught.cause;
  while (cause instanceof Error) {
    if (cause instanceof ApplicationFailure && cause.type === 'StoreRefusedData') return true;
    cause = cause.cause;
  }
  return false;
}

/** A domain's own errors as answers (SCIM's ScimError): undefined for an error it does not know. */
export type DomainErrorAnswer = (caught: unknown) => ErrorAnswer | undefined;

/** The answer to an error a route threw, or undefined for a fault of the service's own (500, logged). */
function answerTo(caught: unknown, revealIds: boolean): ErrorAnswer | undefined {
  // A workflow id carries the new user's id, which the public registration endpoint does not reveal.
  const attempt = (
    status: number,
    title: string,
    error: AttemptInProgressError | ResultDeadlineError,
    publicDetail: string,
  ): ErrorAnswer => ({
    status,
    title,
    detail: revealIds ? error.message : publicDetail,
    ...(status === 409 ? { kind: 'uniqueness' as const } : {}),
    ...(revealIds ? { extensions: { workflowId: error.workflowId } } : {}),
  });
  if (caught instanceof AttemptInProgressError) {
    return attempt(
      409,
      'Attempt in progress',
      caught,
      'an attempt for this e-mail is still running; retry when it has ended',
    );
  }
  if (caught instanceof ResultDeadlineError) {
    return attempt(504, 'Still running', caught, 'the registration is still running; sign in later or register again');
  }
  if (caught instanceof TemporalUnavailableError) {
    return {
      status: 503,
      title: 'Service unavailable',
      detail: caught.message,
      headers: { 'Retry-After': String(caught.retryAfterSeconds) },
    };
  }
  if (storeRefusedData(caught)) {
    return {
      status: 422,
      title: 'Unprocessable entity',
      detail: 'a value of this request cannot be stored (PostgreSQL refused it as data); nothing was kept',
    };
  }
  if (isStoreUnavailable(caught)) {
    return {
      status: 503,
      title: 'Service unavailable',
      detail: 'the store could not be reached or dropped the connection; retry in a few seconds',
      headers: { 'Retry-After': String(STORE_RETRY_AFTER_SECONDS) },
    };
  }
  const error = caught as ParserError | undefined;
  if (error?.type === 'entity.parse.failed')
    return { status: 400, title: 'Invalid request', detail: 'the body is not valid JSON', kind: 'invalidSyntax' };
  if (error?.type === 'entity.too.large') {
    return {
      status: 413,
      title: 'Body too large',
      detail: `the body is larger than the ${error.limit} bytes this endpoint takes`,
    };
  }
  if (caught instanceof z.ZodError) {
    const { status, title, detail, errors } = validationProblem(caught);
    return { status, title, detail, kind: 'invalidValue', extensions: { errors } };
  }
  if (typeof error?.status === 'number' && error.status >= 400 && error.status < 500) {
    return { status: error.status, title: 'Invalid request', detail: error.message ?? 'invalid request' };
  }
  return undefined;
}

/** The one error middleware: every error becomes an answer rendered for whoever asked (problem+json, or SCIM's schema). */
export function errorHandler(domainAnswers: DomainErrorAnswer[] = []): ErrorRequestHandler {
  return (caught, req, res, _next) => {
    const answer =
      domainAnswers.map((answerOf) => answerOf(caught)).find(Boolean) ??
      answerTo(caught, !req.originalUrl.startsWith('/api/auth/'));
    if (answer) return sendError(req, res, answer);
    req.log.error({ err: caught }, `${req.method} ${req.path} failed`);
    sendError(req, res, {
      status: 500,
      title: 'Internal error',
      detail: 'the request failed; the service log has the cause',
    });
  };
}
