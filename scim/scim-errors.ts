import type { Response } from 'express';
import type { StoredAnswer } from '../platform/store/schema';
import type { ErrorAnswer, ErrorDialect, ErrorKind } from '../platform/http/problem';

export const SCIM_CONTENT_TYPE = 'application/scim+json';
export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

/** RFC 7644 §3.12's scimType: the platform's kinds of mistake are named after it. */
export type ScimType = ErrorKind;

const errorBody = (status: number, detail: string, scimType?: ScimType) => ({
  schemas: [ERROR_SCHEMA],
  status: String(status),
  ...(scimType ? { scimType } : {}),
  detail,
});

/** RFC 7644 §3.12 error response. */
export function sendScimError(res: Response, status: number, detail: string, scimType?: ScimType): void {
  res
    .status(status)
    .type(SCIM_CONTENT_TYPE)
    .json(errorBody(status, detail, scimType));
}

export function scimErrorAnswer(error: ScimError): StoredAnswer {
  return {
    status: error.status,
    contentType: SCIM_CONTENT_TYPE,
    body: errorBody(error.status, error.message, error.scimType),
  };
}

export class ScimError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly scimType?: ScimType,
  ) {
    super(message);
  }
}

/** SCIM clients get every error in SCIM's schema (RFC 7644 §3.12), the service's own refusals included. */
export const SCIM_ERROR_DIALECT: ErrorDialect = {
  send: (res, answer) => sendScimError(res, answer.status, answer.detail, answer.kind),
};

/** A ScimError a SCIM handler threw, as the one error handler answers it. */
export const answerScimError = (caught: unknown): ErrorAnswer | undefined =>
  caught instanceof ScimError
    ? { status: caught.status, title: 'Invalid request', detail: caught.message, kind: caught.scimType }
    : undefined;
