import type { Request, Response } from 'express';
import { sendScimError, type ScimType } from './scim-errors';
import type { z } from 'zod';

/** RFC 9457 problem details; `detail` always says which field or app is at fault and why. */
export interface Problem {
  status: number;
  title: string;
  detail: string;
  type?: string;
  [extension: string]: unknown;
}

export function sendProblem(res: Response, problem: Problem): void {
  res
    .status(problem.status)
    .type('application/problem+json')
    .json({ type: 'about:blank', ...problem });
}

const issueList = (error: z.ZodError) =>
  error.issues.map((issue) => ({ field: issue.path.join('.') || '(body)', message: issue.message }));

/** `field: message; field: message`, the wording of every validation error, problem+json and SCIM alike. */
export function describeIssues(error: z.ZodError): string {
  return issueList(error)
    .map((e) => `${e.field}: ${e.message}`)
    .join('; ');
}

/** The one 404 for a user the request names. */
export const userNotFound = (what: string): Problem => ({
  status: 404,
  title: 'User not found',
  detail: `no user with ${what}`,
});

export function validationProblem(error: z.ZodError): Problem {
  return { status: 400, title: 'Invalid request', detail: describeIssues(error), errors: issueList(error) };
}

/** SCIM clients get every error in SCIM's schema (RFC 7644 §3.12); everyone else gets problem+json. */
export const isScimRequest = (req: Request) => req.originalUrl.startsWith('/scim/');

/** An error answer before it is rendered: problem+json fields, SCIM's `scimType`, extra headers. */
export interface ErrorAnswer {
  status: number;
  title: string;
  detail: string;
  scimType?: ScimType;
  type?: string;
  extensions?: Record<string, unknown>;
  headers?: Record<string, string>;
}

/** An error, rendered for whoever asked: SCIM's error schema under /scim, problem+json everywhere else. */
export function sendError(req: Request, res: Response, answer: ErrorAnswer): void {
  if (answer.headers) res.set(answer.headers);
  if (isScimRequest(req)) return sendScimError(res, answer.status, answer.detail, answer.scimType);
  sendProblem(res, {
    status: answer.status,
    title: answer.title,
    detail: answer.detail,
    ...(answer.type ? { type: answer.type } : {}),
    ...answer.extensions,
  });
}

/** A password Auth:PasswordPolicy refuses: every rule it breaks, as each creation route answers it. */
export const passwordPolicyProblem = (violations: string[]): Problem => ({
  status: 400,
  title: 'Password does not meet the policy',
  detail: violations.map((v) => `password: ${v}`).join('; '),
  errors: violations.map((message) => ({ field: 'password', message })),
});
