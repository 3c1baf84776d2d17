import { isDeepStrictEqual } from 'node:util';
import { parse, Tester, type Filter } from 'scim2-parse-filter';
import { ScimError } from './scim-errors';
import { forbiddenPathSegment } from '../platform/security/object-keys';
import type { AttributeDefinition, ResourceSchema } from './published-schemas';

/**
 * RFC 7644 §3.5.2 PATCH, checked against what /Schemas publishes: a path names an attribute of the resource (its
 * core schema's, case-insensitively, with or without the schema's URN, or an extension's under its URN), else the
 * operation is refused (`invalidPath`); read-only attributes are `mutability`; `op` is case-insensitive. Values are
 * taken as sent, so the answer and a later GET show them; the result is then validated like a PUT body.
 */

type Attributes = Record<string, unknown>;
type Op = 'add' | 'replace' | 'remove';

/** Where one operation (or one key of a value without a path) points. */
interface Target {
  /** The extension's URN when the target lies in it; undefined for the core schema. */
  extension?: string;
  /** Undefined when the path is an extension's URN alone (the whole extension object). */
  attribute?: AttributeDefinition;
  filter?: Filter;
  sub?: AttributeDefinition;
}

/** RFC 7643 §2.1: attribute names compare case-insensitively; so do values of attributes that are not caseExact. */
class ValueTester extends Tester {
  override eq(r: unknown, v: unknown): boolean {
    return typeof r === 'string' && typeof v === 'string' ? r.toLowerCase() === v.toLowerCase() : r === v;
  }
  override ne(r: unknown, v: unknown): boolean {
    return !this.eq(r, v);
  }
}
const tester = new ValueTester();

const isObject = (value: unknown): value is Attributes =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const byName = (definitions: AttributeDefinition[] | undefined, name: string) =>
  definitions?.find((d) => d.name.toLowerCase() === name.toLowerCase());

/** A name the client sent, quoted and cut short, for an error that must say which one without repeating a whole body. */
const shown = (name: string) => JSON.stringify(name.length > 100 ? `${name.slice(0, 100)}…` : name);

const PATH = /^([A-Za-z$][\w$-]*)(?:\[(.*)\])?(?:\.([A-Za-z$][\w$-]*))?$/s;

/** One operation's schema and where it sits, so each error names the operation and its field. */
class PatchContext {
  constructor(
    readonly schema: ResourceSchema,
    /** `Operations[i]` */
    readonly at: string,
    /** Where the names come from: the operation's `path`, or the keys of its `value` when it has none. */
    readonly names: 'path' | 'value',
  ) {}

  /** What the path (or the value's key) names is not there or not to be changed. */
  fail(status: 'invalidPath' | 'mutability' | 'noTarget' | 'invalidFilter', detail: string): never {
    throw new ScimError(400, `${this.at}.${this.names}: ${detail}`, status);
  }

  /** The value does not fit what it is sent for. */
  failValue(detail: string): never {
    throw new ScimError(400, `${this.at}.value: ${detail}`, 'invalidValue');
  }

  /** The target of a path, or undefined for an attribute of the core schema this service accepts and ignores. */
  resolve(raw: string): Target | undefined {
    const path = raw.trim();
    if (path === '') this.fail('invalidPath', 'names no attribute (an empty path)');
    const forbidden = forbiddenPathSegment(path);
    if (forbidden) this.fail('invalidPath', `the attribute name "${forbidden}" is not allowed`);
    let rest = path;
    let extension: string | undefined;
    if (/^urn:/i.test(path)) {
      const urns = [this.schema.core, ...Object.keys(this.schema.extensions)];
      const urn = urns
        .filter((u) => path.toLowerCase() === u.toLowerCase() || path.toLowerCase().startsWith(`${u.toLowerCase()}:`))
        .sort((a, b) => b.length - a.length)[0];
      if (!urn)
        this.fail(
          'invalidPath',
          `${shown(path)} names no schema of a ${this.schema.noun} (see /ResourceTypes and /Schemas)`,
        );
      if (urn !== this.schema.core) extension = urn;
      if (path.length === urn.length) {
        if (!extension) this.fail('invalidPath', `${shown(path)} names a schema, not an attribute`);
        return { extension };
      }
      rest = path.slice(urn.length + 1);
    }
    const match = PATH.exec(rest);
    if (!match) this.fail('invalidPath', `${shown(path)} is not an attribute path (attribute[filter].subAttribute)`);
    const [, name, filterText, subName] = match;
    const definitions = extension ? this.schema.extensions[extension] : this.schema.attributes;
    const attribute = byName(definitions, name);
    if (!attribute) {
      if (!extension && this.schema.ignored.some((n) => n.toLowerCase() === name.toLowerCase())) return undefined;
      this.fail('invalidPath', `${shown(path)} names no attribute of a ${this.schema.noun} (see /Schemas)`);
    }
    if (filterText !== undefined && !attribute.multiValued)
      this.fail(
        'invalidPath',
        `${shown(path)}: only a multi-valued attribute takes a filter, and ${attribute.name} is not one`,
      );
    const sub = subName === undefined ? undefined : byName(attribute.subAttributes, subName);
    if (subName !== undefined && !sub)
      this.fail(
        'invalidPath',
        `${shown(path)}: ${attribute.name} has no sub-attribute ${shown(subName)} (see /Schemas)`,
      );
    return { extension, attribute, sub, filter: filterText === undefined ? undefined : this.parseFilter(filterText) };
  }

  parseFilter(text: string): Filter {
    try {
      return parse(text);
    } catch {
      return this.fail(
        'invalidFilter',
        'the value filter in brackets cannot be parsed (RFC 7644 §3.4.2.2: such as type eq "work")',
      );
    }
  }
}

/** A complex value with its keys spelled as the schema spells them; null sub-attributes are unassigned. */
function complexValue(ctx: PatchContext, attribute: AttributeDefinition, value: unknown): Attributes {
  // Entra sends the enterprise manager as its id alone; RFC 7643 holds `{ value }`.
  if (typeof value === 'string' && byName(attribute.subAttributes, 'value')) value = { value };
  if (!isObject(value))
    ctx.failValue(`${attribute.name} is complex: send an object of its sub-attributes (see /Schemas)`);
  const result: Attributes = {};
  for (const [key, inner] of Object.entries(value)) {
    const sub = byName(attribute.subAttributes, key);
    if (!sub) ctx.failValue(`${attribute.name} has no sub-attribute ${shown(key)} (see /Schemas)`);
    if (inner !== null && inner !== undefined) result[sub.name] = inner;
  }
  return result;
}

/** A value of the attribute as the resource holds it (an array for a multi-valued one). */
function valueOf(ctx: PatchContext, attribute: AttributeDefinition, value: unknown): unknown {
  if (attribute.multiValued) {
    const values = Array.isArray(value) ? value : [value];
    return attribute.type === 'complex' ? values.map((v) => complexValue(ctx, attribute, v)) : values;
  }
  return attribute.type === 'complex' ? complexValue(ctx, attribute, value) : value;
}

/** Sets or, for null, unassigns a key; an object left empty is unassigned too (RFC 7643 §2.5). */
function put(holder: Attributes, key: string, value: unknown): void {
  if (value === null || value === undefined || (isObject(value) && Object.keys(value).length === 0)) delete holder[key];
  else holder[key] = value;
}

/** Read-only attributes (id, schemas, meta) change under no operation; sending their current value again is no change. */
function checkMutability(ctx: PatchContext, op: Op, target: Target, current: unknown, value: unknown): boolean {
  const { attribute, sub } = target;
  if (!attribute) return true;
  if (attribute.name === 'schemas' && op !== 'remove' && namesOwnSchemas(ctx.schema, value)) return false;
  if (attribute.mutability === 'readOnly') {
    const same = sub ? isObject(current) && isDeepStrictEqual(current[sub.name], value) : sameValue(current, value);
    if (op !== 'remove' && same) return false;
    ctx.fail('mutability', `${attribute.name}${sub ? `.${sub.name}` : ''} is read-only`);
  }
  if (op === 'remove' && attribute.mutability === 'writeOnly')
    ctx.fail('mutability', `${attribute.name} cannot be removed; replace it to change it`);
  if (sub && sub.mutability !== 'readWrite' && attribute.multiValued)
    ctx.fail(
      'mutability',
      `${attribute.name}.${sub.name} is ${sub.mutability}: replace the whole ${attribute.name} value instead`,
    );
  return true;
}

/**
 * `schemas` follows from the attributes a resource holds (the extension's URN is listed while it has any), so a
 * client that sends it, with or without an extension of this resource, changes nothing; another URN is refused.
 */
const namesOwnSchemas = (schema: ResourceSchema, value: unknown) =>
  Array.isArray(value) &&
  value.some((v) => v === schema.core) &&
  value.every((v) => v === schema.core || Object.hasOwn(schema.extensions, v as string));

/** The same value again; a list such as `schemas` in any order. */
const sameValue = (current: unknown, value: unknown) =>
  isDeepStrictEqual(current, value) ||
  (Array.isArray(current) &&
    Array.isArray(value) &&
    isDeepStrictEqual((current as unknown[]).map(String).sort(), (value as unknown[]).map(String).sort()));

/** One operation on a single-valued attribute (or its sub-attribute). */
function onSingle(ctx: PatchContext, holder: Attributes, op: Op, target: Target, value: unknown): void {
  const attribute = target.attribute!;
  const key = attribute.name;
  if (target.sub) {
    const inner = isObject(holder[key]) ? { ...holder[key] } : {};
    if (op === 'remove') delete inner[target.sub.name];
    else put(inner, target.sub.name, value);
    return put(holder, key, inner);
  }
  if (op === 'remove') return void delete holder[key];
  if (attribute.type !== 'complex') return put(holder, key, value);
  // Entra's bare manager id names another manager: nothing of the previous one's stays.
  if (typeof value === 'string') return put(holder, key, complexValue(ctx, attribute, value));
  // RFC 7644 §3.5.2.1 and .3: the sub-attributes sent are set, the others are left as they were.
  const current = isObject(holder[key]) ? holder[key] : {};
  const merged = { ...current, ...complexValue(ctx, attribute, value) };
  for (const [name, inner] of Object.entries(isObject(value) ? value : {}))
    if (inner === null) delete merged[byName(attribute.subAttributes, name)!.name];
  put(holder, key, merged);
}

/**
 * Entra sets `emails[type eq "work"].value` when the user has no work e-mail yet: an equality filter on a value's
 * sub-attribute becomes a new value with both (RFC 7644 §3.5.2.3 would answer noTarget; nothing else matches).
 */
function newValueFor(filter: Filter): Attributes | undefined {
  if (filter.op !== 'eq' || filter.attrPath.includes('.')) return undefined;
  return { [filter.attrPath]: filter.compValue };
}

/** One operation on a multi-valued attribute, with or without a value filter and a sub-attribute. */
function onMultiple(ctx: PatchContext, holder: Attributes, op: Op, target: Target, value: unknown): void {
  const attribute = target.attribute!;
  const key = attribute.name;
  const values = Array.isArray(holder[key]) ? [...(holder[key] as Attributes[])] : [];
  const matches = target.filter ? values.filter((v) => tester.test(v, target.filter!)) : values;
  if (!target.filter && !target.sub) {
    if (op === 'replace') return put(holder, key, valueOf(ctx, attribute, value));
    if (op === 'add') {
      const added = (valueOf(ctx, attribute, value) as unknown[]).filter(
        (v) => !values.some((w) => isDeepStrictEqual(v, w)),
      );
      return put(holder, key, [...values, ...added]);
    }
    if (value === undefined) return void delete holder[key];
    return put(holder, key, withoutListed(ctx, values, value));
  }
  if (target.filter && matches.length === 0) {
    if (op === 'remove') return;
    const fresh = target.sub?.name === 'value' ? newValueFor(target.filter) : undefined;
    if (!fresh) ctx.fail('noTarget', `no ${key} value matches the filter`);
    const created = { ...fresh, [target.sub!.name]: value };
    return put(holder, key, [...values, valueOf(ctx, attribute, created) as unknown[]].flat());
  }
  if (!target.sub && op !== 'remove' && attribute.subAttributes?.some((sub) => sub.mutability === 'immutable'))
    ctx.fail('mutability', `a ${key} value is immutable: remove it and add the new one, or replace all of ${key}`);
  const changed = values.flatMap((v) => {
    if (!matches.includes(v)) return [v];
    if (!target.sub) return op === 'remove' ? [] : [{ ...v, ...complexValue(ctx, attribute, value) }];
    const copy = { ...v };
    if (op === 'remove') delete copy[target.sub.name];
    else put(copy, target.sub.name, value);
    return [copy];
  });
  put(holder, key, changed.length > 0 ? changed : null);
}

/**
 * Entra removes group members with `{"op":"Remove","path":"members","value":[{"value":"<id>"}]}` (RFC 7644
 * §3.5.2.2 says remove takes no value): each listed value goes.
 */
function withoutListed(ctx: PatchContext, values: Attributes[], listed: unknown): Attributes[] | null {
  const ids = (Array.isArray(listed) ? listed : [listed]).map((member) => {
    const id = isObject(member) ? member.value : undefined;
    if (typeof id !== 'string') ctx.failValue('each value to remove needs its value (the member id)');
    return id;
  });
  const left = values.filter((v) => !ids.includes(v.value as string));
  return left.length > 0 ? left : null;
}

function apply(ctx: PatchContext, resource: Attributes, op: Op, target: Target | undefined, value: unknown): void {
  if (!target) return;
  // RFC 7643 §2.5: null is the same as unassigned.
  if (value === null && op !== 'remove') return apply(ctx, resource, 'remove', target, undefined);
  if (!target.attribute) return onExtension(ctx, resource, op, target.extension!, value);
  const holder = target.extension ? extensionOf(resource, target.extension) : resource;
  if (!checkMutability(ctx, op, target, holder[target.attribute.name], value)) return;
  if (target.attribute.multiValued) onMultiple(ctx, holder, op, target, value);
  else onSingle(ctx, holder, op, target, value);
  if (target.extension && Object.keys(holder).length === 0) delete resource[target.extension];
}

function extensionOf(resource: Attributes, urn: string): Attributes {
  if (!isObject(resource[urn])) resource[urn] = {};
  return resource[urn] as Attributes;
}

/** The extension object as a whole: removed, or each of its attributes added or replaced. */
function onExtension(ctx: PatchContext, resource: Attributes, op: Op, urn: string, value: unknown): void {
  if (op === 'remove') return void delete resource[urn];
  if (!isObject(value)) ctx.failValue(`${urn} is an extension: send an object of its attributes`);
  for (const [key, inner] of Object.entries(value)) apply(ctx, resource, op, ctx.resolve(`${urn}:${key}`), inner);
}

/** Each key of a value without a path names what it sets (RFC 7644 §3.5.2.1): an attribute, a sub-attribute or a URN. */
function applyWithoutPath(ctx: PatchContext, resource: Attributes, op: Op, value: unknown): void {
  if (op === 'remove') ctx.fail('noTarget', 'remove needs a path');
  if (!isObject(value)) ctx.failValue('without a path, the value must be an object of attributes');
  for (const [key, inner] of Object.entries(value)) apply(ctx, resource, op, ctx.resolve(key), inner);
}

function operationOf(operation: unknown, at: string): { op: Op; path?: string; value: unknown } {
  if (!isObject(operation)) throw new ScimError(400, `${at}: each operation is an object`, 'invalidSyntax');
  const op = typeof operation.op === 'string' ? operation.op.toLowerCase() : undefined;
  if (op !== 'add' && op !== 'replace' && op !== 'remove')
    throw new ScimError(400, `${at}.op: must be add, remove or replace`, 'invalidSyntax');
  const { path, value } = operation;
  if (path !== undefined && typeof path !== 'string')
    throw new ScimError(400, `${at}.path: must be a string`, 'invalidPath');
  if (op !== 'remove' && !('value' in operation))
    throw new ScimError(400, `${at}.value: ${op} needs a value`, 'invalidValue');
  // An empty path is no path: the value must then be an object of attributes.
  return { op, path: path === '' ? undefined : path, value };
}

const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

/** The resource as the client sees it with the body's operations applied, in order; nothing is stored here. */
export function applyPatch(resource: object, body: unknown, schema: ResourceSchema): Attributes {
  if (!isObject(body)) throw new ScimError(400, 'the body must be a PatchOp object', 'invalidSyntax');
  if (!Array.isArray(body.schemas) || !body.schemas.includes(PATCH_OP))
    throw new ScimError(400, `schemas: must hold ${PATCH_OP}`, 'invalidSyntax');
  if (!Array.isArray(body.Operations))
    throw new ScimError(400, 'Operations: must be a list of operations', 'invalidSyntax');
  const patched = structuredClone(resource) as Attributes;
  body.Operations.forEach((operation: unknown, i: number) => {
    const at = `Operations[${i}]`;
    const { op, path, value } = operationOf(operation, at);
    const ctx = new PatchContext(schema, at, path === undefined ? 'value' : 'path');
    if (path === undefined) applyWithoutPath(ctx, patched, op, value);
    else apply(ctx, patched, op, ctx.resolve(path), value);
  });
  return patched;
}
