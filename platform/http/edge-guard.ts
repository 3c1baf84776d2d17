import type { Request, RequestHandler } from 'express';
import { findJsonProblem, forbiddenPathSegment, MAX_JSON_DEPTH } from '../security/object-keys';
import { TEXT_PROBLEM_MESSAGES } from '../security/storable-text';
import { sendError, type ErrorKind } from './problem';

/** The body types the part of the service a request goes to takes (the composition knows the parts). */
export type BodyTypesOf = (req: Request) => string[];

/** A request carries a body when it says so; `content-length: 0` (fetch's POST without a body) does not. */
const hasBody = (headers: Record<string, string | string[] | undefined>) =>
  headers['transfer-encoding'] !== undefined ||
  (headers['content-length'] !== undefined && headers['content-length'] !== '0');

function decodedPath(path: string): string | undefined {
  try {
    return decodeURIComponent(path);
  } catch {
    return undefined;
  }
}

/** A request target in absolute form (`http://host/path`, RFC 9112 §3.2.2): the scheme and authority before its path. */
const ABSOLUTE_FORM = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/;

/**
 * The request target as a path (origin form). A request line may name any host in absolute form; that host is text the
 * client wrote, and every URL the service hands out starts with Api:PublicUrl, so only the path and query are kept.
 */
function inOriginForm(req: Request): void {
  if (!ABSOLUTE_FORM.test(req.url)) return;
  const rest = req.url.replace(ABSOLUTE_FORM, '');
  req.url = rest.startsWith('/') ? rest : `/${rest}`;
  req.originalUrl = req.url;
}

/**
 * Input the service cannot hold or must not walk is refused here, before any route, library or workflow sees it
 * (and a request target in absolute form is read as its path): a body in a type the part of the service asked does
 * not take (415), a NUL character anywhere (PostgreSQL's text cannot store one),
 * a JSON key, query attribute or SCIM filter that names `__proto__`, `constructor` or `prototype` (400).
 */
export function edgeGuard(bodyTypesOf: BodyTypesOf): RequestHandler {
  return (req, res, next) => {
    inOriginForm(req);
    const refuse = (detail: string, kind: ErrorKind) =>
      sendError(req, res, { status: 400, title: 'Invalid request', detail, kind });
    const path = decodedPath(req.path);
    if (path === undefined) return refuse('path: not a valid percent-encoded URL path', 'invalidValue');
    if (path.includes('\0')) return refuse('path: must not contain NUL characters', 'invalidValue');

    for (const [name, value] of Object.entries(req.query)) {
      for (const text of [value].flat()) {
        if (typeof text !== 'string') continue;
        if (text.includes('\0') || name.includes('\0')) {
          return refuse(`${name.replace(/\0/g, '\\u0000')}: must not contain NUL characters`, 'invalidValue');
        }
        const forbidden = ['filter', 'attributes', 'excludedAttributes', 'sortBy'].includes(name)
          ? forbiddenPathSegment(text)
          : undefined;
        if (forbidden)
          return refuse(
            `${name}: the attribute name "${forbidden}" is not allowed`,
            name === 'filter' ? 'invalidFilter' : 'invalidPath',
          );
      }
    }

    if (hasBody(req.headers)) {
      const types = bodyTypesOf(req);
      if (!req.is(types)) {
        return sendError(req, res, {
          status: 415,
          title: 'Unsupported media type',
          detail: `the body must be ${types.join(' or ')}; this request sent ${req.get('content-type') ?? 'no content type'}`,
          kind: 'invalidSyntax',
        });
      }
    }
    next();
  };
}

/**
 * After the JSON parser: a key that names a prototype, a key or string the store cannot hold (NUL, a lone surrogate)
 * anywhere in the parsed body, or nesting deeper than MAX_JSON_DEPTH, is refused with 400 naming where.
 */
export function rejectJsonProblems(): RequestHandler {
  return (req, res, next) => {
    const problem = findJsonProblem(req.body);
    const refuse = (detail: string, kind: ErrorKind) =>
      sendError(req, res, { status: 400, title: 'Invalid request', detail, kind });
    if (!problem) return next();
    if (problem.problem === 'forbidden-key')
      return refuse(`${problem.path}: this key name is not allowed`, 'invalidPath');
    if (problem.problem === 'too-deep')
      return refuse(`${problem.path}: nested deeper than ${MAX_JSON_DEPTH} levels`, 'invalidSyntax');
    refuse(`${problem.path}: ${TEXT_PROBLEM_MESSAGES[problem.problem]}`, 'invalidValue');
  };
}
