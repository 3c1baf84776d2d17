import type { Request, RequestHandler } from 'express';
import { z } from 'zod';

/**
 * The handlers of a surface of the API, by the operationId its route has in the route table
 * (api/openapi/routes.ts). The table mounts them: a handler is reachable only through a route of the table, which the
 * OpenAPI document is built from, and a route without its handler (or a handler without a route) stops start-up.
 */
export type Operations = Record<string, RequestHandler | RequestHandler[]>;

/** A named path parameter (`{name}` in the table): always one string for a named segment. */
export function pathParam(req: Request, name: string): string {
  const value = req.params[name];
  if (typeof value !== 'string')
    throw new Error(`route parameter ${name} is missing: the handler's route does not name it`);
  return value;
}

/**
 * A named path parameter checked by `schema`: a value it refuses is a 400 whose problem names the parameter
 * (`userId: …`), as a body's names its field.
 */
export function parsedPathParam<T>(req: Request, name: string, schema: z.ZodType<T>): T {
  const parsed = schema.safeParse(pathParam(req, name));
  if (parsed.success) return parsed.data;
  throw new z.ZodError(parsed.error.issues.map((issue) => ({ ...issue, path: [name, ...issue.path] })));
}
