import type { Request, RequestHandler, Response } from 'express';
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

/**
 * What kind of mistake an error answer reports, in the words of a protocol that carries one (SCIM's `scimType`, RFC
 * 7644 §3.12, has these); problem+json leaves it out.
 */
export type ErrorKind =
  | 'uniqueness'
  | 'invalidFilter'
  | 'invalidValue'
  | 'invalidSyntax'
  | 'mutability'
  | 'noTarget'
  | 'invalidPath'
  | 'tooMany';

/** An error answer before it is rendered: problem+json fields, the kind of mistake, extra headers. */
export interface ErrorAnswer {
  status: number;
  title: string;
  detail: string;
  kind?: ErrorKind;
  type?: string;
  extensions?: Record<string, unknown>;
  headers?: Record<string, string>;
}

/**
 * A part of the API whose clients expect an error schema of their own (SCIM's) renders the errors of its requests:
 * its router marks them (speaksErrorDialect), mounted before anything that may refuse a request.
 */
export interface ErrorDialect {
  send(res: Response, answer: ErrorAnswer): void;
}

export const speaksErrorDialect =
  (dialect: ErrorDialect): RequestHandler =>
  (_req, res, next) => {
    res.locals.errorDialect = dialect;
    next();
  };

/** An error, rendered for whoever asked: in the dialect of the part of the API asked, else problem+json. */
export function sendError(_req: Request, res: Response, answer: ErrorAnswer): void {
  if (answer.headers) res.set(answer.headers);
  const dialect = res.locals.errorDialect as ErrorDialect | undefined;
  if (dialect) return dialect.send(res, answer);
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
