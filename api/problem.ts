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

export function validationProblem(error: z.ZodError): Problem {
  const errors = error.issues.map((issue) => ({ field: issue.path.join('.') || '(body)', message: issue.message }));
  return {
    status: 400,
    title: 'Invalid request',
    detail: errors.map((e) => `${e.field}: ${e.message}`).join('; '),
    errors,
  };
}
