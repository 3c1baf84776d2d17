import type { Response } from 'express';
import type { StoredAnswer } from '../store/schema';

export const SCIM_CONTENT_TYPE = 'application/scim+json';
export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

export type ScimType =
  | 'uniqueness'
  | 'invalidFilter'
  | 'invalidValue'
  | 'invalidSyntax'
  | 'mutability'
  | 'noTarget'
  | 'invalidPath'
  | 'tooMany';

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
