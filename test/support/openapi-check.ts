import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { buildOpenApiDocument } from '../../api/openapi/document';
import { findRoute } from '../../api/openapi/routes';

/** The document every answer a test receives through the harness is checked against. */
export const OPENAPI_DOCUMENT = buildOpenApiDocument('http://127.0.0.1');

/** Schemas with their component references made absolute, so each answer's schema compiles on its own. */
const absolute = <T>(value: T): T =>
  JSON.parse(JSON.stringify(value).replaceAll('"#/components/schemas/', '"components.json#/schemas/')) as T;

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(absolute({ schemas: (OPENAPI_DOCUMENT.components as { schemas: object }).schemas }), 'components.json');
const compiled = new Map<unknown, ReturnType<typeof ajv.compile>>();

interface Operation {
  responses: Record<string, { content?: Record<string, { schema: object }> }>;
}

/**
 * What is wrong with an answer of a documented route, by the OpenAPI document: a status it does not list, or a body
 * that does not match the listed schema. Undefined when the answer fits, or the route is not in the document.
 */
export function answerProblem(method: string, url: string, status: number, contentType: string | null, body: unknown) {
  const path = new URL(url, 'http://x').pathname.replace(/(.)\/+$/, '$1');
  const route = findRoute(method, path);
  if (!route) return undefined;
  const paths = OPENAPI_DOCUMENT.paths as Record<string, Record<string, Operation>>;
  const answer = paths[route.path][route.method].responses[String(status)];
  if (!answer)
    return `${method} ${path} answered ${status}, which the OpenAPI document does not list for ${route.path}`;
  if (!answer.content) return undefined;
  const type = (contentType ?? '').split(';')[0].trim();
  if (!(type in answer.content))
    return `${method} ${path} answered ${status} as ${type || 'no content type'}; the document says ${Object.keys(answer.content).join(' or ')}`;
  const schema = answer.content[type].schema;
  const validate = compiled.get(schema) ?? ajv.compile(absolute(schema));
  compiled.set(schema, validate);
  if (validate(body)) return undefined;
  return `${method} ${path} answered ${status} with a body the document does not describe: ${ajv.errorsText(validate.errors)}`;
}
