import type { z } from 'zod';

/** The shape of the route table (routes.ts): one entry a route, feeding both Express and the OpenAPI document. */
export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
/** admin: the IdentityAdmin policy (an admin API key or the service's own admin token); scim: a SCIM token. */
export type Auth = 'admin' | 'scim' | 'public';
export type Tag = 'Users' | 'Registration' | 'Clients' | 'SSO providers' | 'Provisioning apps' | 'SCIM' | 'Operations';

/** A success answer with its body (none for 204), or an error status's description (its body is the error shape). */
export type Answer = { description: string; body?: z.ZodType } | string;

export interface RouteSpec {
  /** The handler's name: the domains export their handlers by it, and the app mounts them from this table. */
  operationId: string;
  method: Method;
  /** The OpenAPI template: `{name}` for a path parameter, as Express's `:name`. */
  path: string;
  summary: string;
  tag: Tag;
  auth: Auth;
  body?: z.ZodType;
  query?: z.ZodObject;
  /** Starts a workflow and waits for its answer: 503 when Temporal is unreachable, 504 past the API's deadline. */
  workflow?: boolean;
  /** The configuration without which the route does not exist (then it answers 404 and has no handler). */
  absent?: string;
  answers: Record<number, Answer>;
}
