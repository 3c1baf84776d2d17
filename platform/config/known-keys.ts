import type { z } from 'zod';
import { configSchema } from './config-schema';

/** The zod internals a walk over the configuration's shape reads (zod 4's `_zod.def`). */
interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  in?: z.ZodType;
  out?: z.ZodType;
}
const defOf = (schema: z.ZodType) => (schema as unknown as { _zod: { def: Def } })._zod.def;
const WRAPPERS = ['default', 'prefault', 'optional', 'nullable', 'readonly', 'catch', 'nonoptional'];

/**
 * The keys of a section of the configuration, or undefined when below it anything goes (a value, a list, a map of
 * apps by id): the wrappers (defaults, optional) and pipes (preprocessing, transforms) are looked through.
 */
function keysOf(schema: z.ZodType): Record<string, z.ZodType> | undefined {
  let node = schema;
  for (let depth = 0; depth < 16; depth++) {
    const def = defOf(node);
    if (def.type === 'object') return def.shape;
    if (WRAPPERS.includes(def.type) && def.innerType) node = def.innerType;
    else if (def.type === 'pipe' && def.in && def.out) node = defOf(def.in).type === 'transform' ? def.out : def.in;
    else return undefined;
  }
  return undefined;
}

/** Levenshtein distance, case-insensitive: how far a typed key is from a known one. */
function distance(a: string, b: string): number {
  const [x, y] = [a.toLowerCase(), b.toLowerCase()];
  let row = Array.from({ length: y.length + 1 }, (_, j) => j);
  for (let i = 1; i <= x.length; i++) {
    const next = [i];
    for (let j = 1; j <= y.length; j++)
      next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (x[i - 1] === y[j - 1] ? 0 : 1));
    row = next;
  }
  return row[y.length];
}

/** The known key closest to a typed one. */
export const closestKey = (typed: string, known: string[]) =>
  known.reduce((best, key) => (distance(typed, key) < distance(typed, best) ? key : best), known[0]);

/**
 * Where a configuration key (`Migration:SourceDataProtection:ApplicationName`, matched case-insensitively as ASP.NET
 * configuration is) leaves the configuration's shape: the index of its first unknown part and the keys known there;
 * undefined for a key the configuration reads. A key that is not read would otherwise be dropped in silence.
 */
export function unknownKeyPart(path: string): { index: number; known: string[] } | undefined {
  const parts = path.split(':');
  let shape = keysOf(configSchema);
  for (let index = 0; index < parts.length && shape; index++) {
    const key = Object.keys(shape).find((k) => k.toLowerCase() === parts[index].toLowerCase());
    if (!key) return { index, known: Object.keys(shape) };
    shape = keysOf(shape[key]);
  }
  return undefined;
}
