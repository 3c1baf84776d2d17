import type { Response } from 'express';

export const SCIM_CONTENT_TYPE = 'application/scim+json';
export const ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

export type ScimType = 'uniqueness' | 'invalidFilter' | 'invalidValue' | 'invalidSyntax' | 'mutability' | 'noTarget' | 'invalidPath' | 'tooMany';

/** RFC 7644 §3.12 error response. */
export function sendScimError(res: Response, status: number, detail: string, scimType?: ScimType): void {
  res
    .status(status)
    .type(SCIM_CONTENT_TYPE)
    .json({ schemas: [ERROR_SCHEMA], status: String(status), ...(scimType ? { scimType } : {}), detail });
}

export class ScimError extends Error {
  constructor(readonly status: number, message: string, readonly scimType?: ScimType) {
    super(message);
  }
}
