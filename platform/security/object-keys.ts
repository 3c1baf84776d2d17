import { printableName, textProblem, type TextProblem } from './storable-text';

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

export type JsonProblem = { path: string; problem: 'forbidden-key' | 'too-deep' | TextProblem };

/** How deep a JSON body may nest: far beyond any resource this service takes, far below a stack's limit. */
export const MAX_JSON_DEPTH = 32;

/**
 * Walks a parsed JSON value for a key named like a prototype, a key or string the store cannot hold (NUL, a lone
 * surrogate: security/storable-text.ts), or nesting deeper than `maxDepth`. The path is the dotted field name the
 * client sent (`customAttributes.__proto__`). Iterative, so no body can overflow the stack; the first problem in
 * document order is the one reported.
 */
export function findJsonProblem(root: unknown, maxDepth = MAX_JSON_DEPTH): JsonProblem | undefined {
  const stack: Array<{ value: unknown; path: string; depth: number }> = [{ value: root, path: '', depth: 0 }];
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop()!;
    if (typeof value === 'string') {
      const problem = textProblem(value);
      if (problem) return { path: path || '(body)', problem };
      continue;
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth >= maxDepth) return { path: path || '(body)', problem: 'too-deep' };
    const children: Array<{ value: unknown; path: string; depth: number }> = [];
    if (Array.isArray(value)) {
      value.forEach((item, index) => children.push({ value: item, path: `${path}[${index}]`, depth: depth + 1 }));
    } else {
      for (const key of Object.keys(value)) {
        const at = path ? `${path}.${key}` : key;
        // A key may itself be a path (a SCIM PATCH value without a path names attributes like `name.givenName`).
        if (forbiddenPathSegment(key)) return { path: at, problem: 'forbidden-key' };
        const keyProblem = textProblem(key);
        if (keyProblem) return { path: printableName(at), problem: keyProblem };
        children.push({ value: (value as Record<string, unknown>)[key], path: at, depth: depth + 1 });
      }
    }
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]);
  }
  return undefined;
}

/**
 * A copy of a string map from outside the API (an app's Try answer, a migrated claim, a stored row) without
 * forbidden keys, in an object whose own properties are the only ones; each dropped key is reported. `refuse` drops
 * more keys, saying why (`onDropped` then gets the reason; a forbidden key has none).
 */
export function safeStringMap(
  map: Readonly<Record<string, string>>,
  onDropped: (key: string, reason?: string) => void,
  refuse: (key: string) => string | undefined = () => undefined,
): Record<string, string> {
  const copy: Record<string, string> = {};
  for (const [key, value] of Object.entries(map)) {
    const reason = isForbiddenKey(key) ? undefined : refuse(key);
    if (isForbiddenKey(key) || reason !== undefined) onDropped(key, reason);
    else copy[key] = value;
  }
  return copy;
}
