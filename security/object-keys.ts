/**
 * Keys that reach an object's prototype when code walks or assigns by name (`obj[key] = …`, `a.b.c` paths).
 * Nothing attacker-chosen may name one: request bodies, SCIM paths and filters, configuration keys, attributes an
 * app or a migrated claim hands over. Compared without regard to case, because SCIM attribute names are
 * case-insensitive and libraries that match them may fold case.
 */
const FORBIDDEN = new Set(['__proto__', 'constructor', 'prototype']);

export const isForbiddenKey = (key: string): boolean => FORBIDDEN.has(key.toLowerCase());

/**
 * The first forbidden name in an attribute path or a SCIM filter, such as `name.__proto__.x` or
 * `emails[type eq "work"].constructor`. Quoted strings are values, not names, and are left out.
 */
export function forbiddenPathSegment(path: string): string | undefined {
  const names = path.replace(/"(?:[^"\\]|\\.)*"/g, ' ').split(/[^A-Za-z0-9_$]+/);
  return names.find((name) => name !== '' && isForbiddenKey(name));
}

export type JsonProblem = { path: string; problem: 'forbidden-key' | 'nul' };

/**
 * Walks a parsed JSON value for a key named like a prototype or a NUL character in any key or string (PostgreSQL's
 * text cannot hold one). The path is the dotted field name the client sent (`customAttributes.__proto__`).
 */
export function findJsonProblem(value: unknown, path = ''): JsonProblem | undefined {
  if (typeof value === 'string') return value.includes('\0') ? { path: path || '(body)', problem: 'nul' } : undefined;
  if (value === null || typeof value !== 'object') return undefined;
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) {
      const found = findJsonProblem(item, `${path}[${index}]`);
      if (found) return found;
    }
    return undefined;
  }
  for (const key of Object.keys(value)) {
    const at = path ? `${path}.${key}` : key;
    // A key may itself be a path (a SCIM PATCH value without a path names attributes like `name.givenName`).
    if (forbiddenPathSegment(key)) return { path: at, problem: 'forbidden-key' };
    if (key.includes('\0')) return { path: at.replace(/\0/g, '\\u0000'), problem: 'nul' };
    const found = findJsonProblem((value as Record<string, unknown>)[key], at);
    if (found) return found;
  }
  return undefined;
}

/**
 * A copy of a string map from outside the API (an app's Try answer, a migrated claim, a stored row) without
 * forbidden keys, in an object whose own properties are the only ones; each dropped key is reported.
 */
export function safeStringMap(
  map: Readonly<Record<string, string>>,
  onDropped: (key: string) => void,
): Record<string, string> {
  const copy: Record<string, string> = {};
  for (const [key, value] of Object.entries(map)) {
    if (isForbiddenKey(key)) onDropped(key);
    else copy[key] = value;
  }
  return copy;
}
