import type { Response } from 'express';
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
  res.status(problem.status).type('application/problem+json').json({ type: 'about:blank', ...problem });
}

const issueList = (error: z.ZodError) => error.issues.map((issue) => ({ field: issue.path.join('.') || '(body)', message: issue.message }));

/** `field: message; field: message`, the wording of every validation error, problem+json and SCIM alike. */
export function describeIssues(error: z.ZodError): string {
  return issueList(error).map((e) => `${e.field}: ${e.message}`).join('; ');
}

export function validationProblem(error: z.ZodError): Problem {
  return { status: 400, title: 'Invalid request', detail: describeIssues(error), errors: issueList(error) };
}
