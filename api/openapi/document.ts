import { z } from 'zod';
import { problemSchema, scimErrorSchema } from './schemas';
import { ROUTES } from './routes';
import type { Answer, RouteSpec } from './route-spec';

type JsonSchema = Record<string, unknown>;

/** Request bodies are described as a client writes them (before defaults and coercion), answers as they are sent. */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const converted = z.toJSONSchema(schema, { io, unrepresentable: 'any', target: 'draft-2020-12' });
  // Named shapes (`.meta({ id })`) land under $defs; the document keeps them as components.
  const { $schema: _dialect, ...rest } = JSON.parse(
    JSON.stringify(converted).replaceAll('"#/$defs/', '"#/components/schemas/'),
  ) as JsonSchema;
  return rest;
}

/** Moves the named definitions z.toJSONSchema put under `$defs` into the document's components. */
function hoist(schema: JsonSchema, components: Record<string, JsonSchema>): JsonSchema {
  const { $defs, ...rest } = schema as JsonSchema & { $defs?: Record<string, JsonSchema> };
  for (const [id, definition] of Object.entries($defs ?? {})) components[id] ??= definition;
  return rest;
}

/** The statuses every route of a kind can answer, beside its own. */
function commonAnswers(route: RouteSpec): Record<number, string | undefined> {
  return {
    ...(route.path.includes('{') && { 400: 'A path parameter is not valid; `detail` names it and why' }),
    ...(route.body && {
      400: 'The body or a parameter is not valid; `detail` names the field and why',
      413: 'The body is larger than the endpoint takes',
      415: 'The body is not JSON (SCIM: application/scim+json or application/json)',
    }),
    ...(route.query && { 400: 'A parameter is not valid; `detail` names it and why' }),
    ...(route.auth === 'admin' && {
      401: 'No admin credential (Authorization: Bearer <admin API key or admin access token>), or one that is no admin key nor a standing access token of this service (WWW-Authenticate: Bearer error="invalid_token")',
      403: 'A standing access token without the IdentityAdmin right (WWW-Authenticate: Bearer error="insufficient_scope")',
    }),
    ...(route.auth === 'scim' && { 401: 'No valid SCIM token' }),
    ...((route.auth !== 'public' || route.workflow) && {
      503: 'The store could not be reached or dropped the connection; send again after Retry-After',
    }),
    ...(route.workflow && {
      503: 'Temporal or the store could not be reached; send again after Retry-After (with the same Idempotency-Key to meet an attempt that did start)',
      504: 'The workflow is still running past the API deadline; repeat with the same Idempotency-Key',
    }),
    500: 'A fault of the service; the log line with this X-Request-Id has the cause',
  };
}

function parametersOf(route: RouteSpec, components: Record<string, JsonSchema>) {
  const path = [...route.path.matchAll(/\{(\w+)\}/g)].map(([, name]) => ({
    name,
    in: 'path',
    required: true,
    schema: { type: 'string', maxLength: 256 },
  }));
  const query = Object.entries(route.query?.shape ?? {}).map(([name, schema]) => ({
    name,
    in: 'query',
    required: !(schema as z.ZodType).safeParse(undefined).success,
    schema: hoist(jsonSchema(schema as z.ZodType, 'input'), components),
  }));
  return [
    ...path,
    ...query,
    { $ref: '#/components/parameters/RequestId' },
    ...(route.method === 'post' && route.workflow ? [{ $ref: '#/components/parameters/IdempotencyKey' }] : []),
  ];
}

function responsesOf(route: RouteSpec, components: Record<string, JsonSchema>): Record<string, unknown> {
  const scim = route.path.startsWith('/scim/');
  const errorContent = scim
    ? { 'application/scim+json': { schema: { $ref: '#/components/schemas/ScimError' } } }
    : { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } };
  const successType = scim ? 'application/scim+json' : 'application/json';
  const answers = { ...commonAnswers(route), ...route.answers };
  return Object.fromEntries(
    Object.entries(answers)
      .filter((entry): entry is [string, Answer] => entry[1] !== undefined)
      .map(([status, answer]): [string, unknown] => {
        const headers = { 'X-Request-Id': { $ref: '#/components/headers/RequestId' } };
        if (typeof answer === 'string') {
          const empty = Number(status) < 400;
          return [status, { description: answer, headers, ...(empty ? {} : { content: errorContent }) }];
        }
        const content = answer.body && {
          [successType]: { schema: hoist(jsonSchema(answer.body, 'output'), components) },
        };
        return [status, { description: answer.description, headers, ...(content && { content }) }];
      }),
  );
}

const SECURITY = { admin: [{ adminBearer: [] }], scim: [{ scimToken: [] }], public: [] };

/** The OpenAPI 3.1 document of every route in the table, built once per process. */
export function buildOpenApiDocument(serverUrl: string): JsonSchema {
  const components: Record<string, JsonSchema> = {};
  // The two error shapes are named (`.meta({ id })`): converting them registers them as components.
  for (const errorShape of [problemSchema, scimErrorSchema]) hoist(jsonSchema(errorShape, 'output'), components);
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of ROUTES) {
    const scim = route.path.startsWith('/scim/');
    const { operationId } = route;
    // A request body is a component of its own: SCIM routes name it under two content types.
    if (route.body) components[`${operationId}Body`] = hoist(jsonSchema(route.body, 'input'), components);
    paths[route.path] ??= {};
    paths[route.path][route.method] = {
      operationId,
      summary: route.summary,
      tags: [route.tag],
      security: SECURITY[route.auth],
      parameters: parametersOf(route, components),
      ...(route.body && {
        requestBody: {
          required: true,
          content: Object.fromEntries(
            (scim ? ['application/scim+json', 'application/json'] : ['application/json']).map((type) => [
              type,
              { schema: { $ref: `#/components/schemas/${operationId}Body` } },
            ]),
          ),
        },
      }),
      responses: responsesOf(route, components),
    };
  }
  return {
    openapi: '3.1.1',
    info: {
      title: 'Identity provisioning and migration service',
      version: '1',
      description:
        'User provisioning into downstream apps with Try-Confirm-Cancel, the admin API, SCIM 2.0 and migration status. ' +
        'Errors are problem+json (RFC 9457) under /api and /admin, SCIM errors (RFC 7644 §3.12) under /scim/v2. ' +
        'The sign-in pages and the OpenID Connect and SAML endpoints are documented by their own standards ' +
        '(see /.well-known/openid-configuration).',
    },
    servers: [{ url: serverUrl }],
    tags: [...new Set(ROUTES.map((r) => r.tag))].map((name) => ({ name })),
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        adminBearer: {
          type: 'http',
          scheme: 'bearer',
          description: 'An entry of Auth:AdminApiKeys, or an access token the service issued to an IdentityAdmin',
        },
        scimToken: { type: 'http', scheme: 'bearer', description: 'A SCIM token made with POST /api/v1/scim/tokens' },
      },
      parameters: {
        RequestId: {
          name: 'X-Request-Id',
          in: 'header',
          required: false,
          description: 'Carried into every log line of the request and sent back; made when absent or malformed',
          schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{1,128}$' },
        },
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description: 'A repeat with the same key and body gets the same attempt and its answer',
          schema: { type: 'string', maxLength: 256 },
        },
      },
      headers: {
        RequestId: { description: "The request's id, as in the log", schema: { type: 'string' } },
      },
    },
  };
}
