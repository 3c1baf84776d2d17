import type { Request } from 'express';
import { z } from 'zod';
import { describeIssues } from '../platform/http/problem';
import { ScimError } from './scim-errors';
import type { ScimUserRow } from './store/scim-users';
import type { ScimEmail, ScimManager, ScimName } from '../platform/store/schema';
import { passwordText } from '../platform/http/fields';
import { FIELD_BOUNDS } from '../platform/security/field-bounds';

export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';

/** Entra sends booleans as "True"/"False" strings. */
export const scimBoolean = z.union([
  z.boolean(),
  z
    .string()
    .regex(/^(true|false)$/i)
    .transform((v) => v.toLowerCase() === 'true'),
]);

/** RFC 7643 §4.3: the enterprise user extension, which Microsoft Entra ID sends. */
export const ENTERPRISE_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';

/**
 * The extension's attributes, kept as the user's custom attributes under their plain names (so they reach every
 * downstream app in Try's `customAttributes`); `manager` as the manager's id.
 */
export const ENTERPRISE_ATTRIBUTES = [
  'employeeNumber',
  'costCenter',
  'organization',
  'division',
  'department',
] as const;

/** A SCIM string kept as sent (RFC 7643 compared whole: no trimming). */
const sentText = z.string().max(256).nullish();

/**
 * A unique name (userName, a group's displayName): refused rather than trimmed when it begins or ends with a space,
 * so the answer is what was sent and two spellings never name one resource.
 */
export const uniqueName = z
  .string()
  .min(1)
  .max(256)
  .refine((v) => v.trim() === v && v.trim() !== '', 'must not be blank or begin or end with a space');

const enterpriseSchema = z.looseObject({
  ...Object.fromEntries(ENTERPRISE_ATTRIBUTES.map((name) => [name, sentText])),
  // Entra sets the manager by its id alone (`…:User:manager` = "<id>"); RFC 7643 says `{ value, $ref, displayName }`.
  manager: z
    .union([
      z.string().max(256),
      z.looseObject({ value: sentText, $ref: z.string().max(2048).nullish(), displayName: sentText }),
    ])
    .nullish(),
});

/** RFC 7643 §4.1.1: every sub-attribute of `name`, kept as sent. */
export const NAME_PARTS = [
  'formatted',
  'familyName',
  'givenName',
  'middleName',
  'honorificPrefix',
  'honorificSuffix',
] as const;

/** What this service keeps of a SCIM user; other attributes (phone numbers, addresses, …) are accepted and ignored. */
export const scimUserInputSchema = z.looseObject({
  [ENTERPRISE_SCHEMA]: enterpriseSchema.nullish(),
  userName: uniqueName,
  externalId: sentText,
  name: z.looseObject(Object.fromEntries(NAME_PARTS.map((part) => [part, sentText]))).nullish(),
  emails: z
    .array(
      z.looseObject({
        value: z.string().trim().max(FIELD_BOUNDS.email),
        type: z.string().max(64).nullish(),
        primary: scimBoolean.nullish(),
      }),
    )
    .max(20)
    .nullish(),
  active: scimBoolean.optional(),
  password: passwordText.optional(),
});

export type ScimUserInput = z.infer<typeof scimUserInputSchema>;

/** The enterprise extension of an input as custom attributes (only those it sets). */
export function enterpriseAttributesOf(input: ScimUserInput): Record<string, string> {
  const extension = (input[ENTERPRISE_SCHEMA] ?? {}) as Record<string, unknown> & {
    manager?: { value?: unknown } | null;
  };
  const attributes: Record<string, string> = {};
  for (const name of ENTERPRISE_ATTRIBUTES) {
    const value = extension[name];
    if (typeof value === 'string' && value !== '') attributes[name] = value;
  }
  const manager = managerOf(input)?.value;
  if (manager !== undefined) attributes.manager = manager;
  return attributes;
}

/** The manager as sent (`{ value }` for Entra's bare id); one without a value is no manager, unless it says more. */
export function managerOf(input: ScimUserInput): ScimManager | undefined {
  const sent = (input[ENTERPRISE_SCHEMA] as { manager?: string | Partial<Record<keyof ScimManager, string | null>> })
    ?.manager;
  const manager = typeof sent === 'string' ? { value: sent } : (sent ?? {});
  const kept = Object.fromEntries(Object.entries(manager).filter(([, v]) => typeof v === 'string' && v !== ''));
  if (kept.value === undefined && Object.keys(kept).length > 0)
    throw new ScimError(
      400,
      `${ENTERPRISE_SCHEMA}:manager.value: a manager needs its value (the manager's id); remove manager to clear it`,
      'invalidValue',
    );
  return kept.value === undefined ? undefined : (kept as unknown as ScimManager);
}

/** The name as sent, without unassigned sub-attributes; undefined when none is set. */
export function nameOf(input: ScimUserInput): ScimName | undefined {
  const sent = (input.name ?? {}) as Record<string, unknown>;
  const name = Object.fromEntries(NAME_PARTS.filter((p) => typeof sent[p] === 'string').map((p) => [p, sent[p]]));
  return Object.keys(name).length > 0 ? name : undefined;
}

/** The custom attributes a user keeps besides the extension's, with the extension's replaced by `input`'s. */
export function withEnterpriseAttributes(
  current: Record<string, string>,
  input: ScimUserInput,
): Record<string, string> {
  const kept = Object.fromEntries(
    Object.entries(current).filter(
      ([name]) => !(ENTERPRISE_ATTRIBUTES as readonly string[]).includes(name) && name !== 'manager',
    ),
  );
  return { ...kept, ...enterpriseAttributesOf(input) };
}

/**
 * The extension as a resource shows it, from the user's custom attributes; undefined when it has none. The manager's
 * `$ref` and `displayName` are the client's, while the manager is still the one it sent (the admin API may change it).
 */
function enterpriseExtensionOf(custom: Record<string, string>, sent: ScimManager | null) {
  const extension: Record<string, unknown> = {};
  for (const name of ENTERPRISE_ATTRIBUTES) if (Object.hasOwn(custom, name)) extension[name] = custom[name];
  if (Object.hasOwn(custom, 'manager'))
    extension.manager = sent?.value === custom.manager ? sent : { value: custom.manager };
  return Object.keys(extension).length > 0 ? extension : undefined;
}

/**
 * The name as the client sent it, while its givenName and familyName are still the user's (the admin API may change
 * them); otherwise those two alone. Nothing is made up: no `formatted` the client did not send.
 */
function nameResource(row: ScimUserRow): ScimName | undefined {
  const sent = row.scim_name;
  if (sent && (sent.givenName ?? null) === row.first_name && (sent.familyName ?? null) === row.last_name) return sent;
  const name = {
    ...(row.first_name ? { givenName: row.first_name } : {}),
    ...(row.last_name ? { familyName: row.last_name } : {}),
  };
  return Object.keys(name).length > 0 ? name : undefined;
}

const emailSchema = z.email();

/** The primary e-mail, else the work one, else the first, else a userName that is an e-mail address. */
export function chooseEmail(input: ScimUserInput): string | undefined {
  const emails = input.emails ?? [];
  const chosen = emails.find((e) => e.primary) ?? emails.find((e) => e.type === 'work') ?? emails[0];
  const candidate = chosen?.value ?? input.userName;
  return emailSchema.safeParse(candidate).success ? candidate : undefined;
}

/**
 * The e-mails as sent, each with its `type` and `primary` (RFC 7643 §2.4: one primary at most); a value that is not an
 * e-mail address is refused rather than dropped.
 */
export function emailListOf(input: ScimUserInput, signInEmail: string): ScimEmail[] {
  const sent = input.emails ?? [];
  if (sent.filter((e) => e.primary === true).length > 1)
    throw new ScimError(400, 'emails: at most one e-mail can be primary', 'invalidValue');
  sent.forEach((e, i) => {
    if (!emailSchema.safeParse(e.value).success)
      throw new ScimError(
        400,
        `emails[${i}].value: ${JSON.stringify(e.value.slice(0, 100))} is not an e-mail address`,
        'invalidValue',
      );
  });
  if (sent.length === 0) return [{ value: signInEmail, type: 'work', primary: true }];
  return sent.map((e) => ({
    value: e.value,
    ...(e.type ? { type: e.type.slice(0, 64) } : {}),
    ...(typeof e.primary === 'boolean' ? { primary: e.primary } : {}),
  }));
}

export const versionOf = (updatedAt: Date) => `W/"${updatedAt.getTime()}"`;

export function meta(resourceType: 'User' | 'Group', location: string, created: Date, updated: Date) {
  return {
    resourceType,
    created: created.toISOString(),
    lastModified: updated.toISOString(),
    location,
    version: versionOf(updated),
  };
}

export function userResource(row: ScimUserRow, usersUrl: string) {
  const enterprise = enterpriseExtensionOf(row.custom_attributes, row.scim_manager);
  const name = nameResource(row);
  return {
    schemas: enterprise ? [USER_SCHEMA, ENTERPRISE_SCHEMA] : [USER_SCHEMA],
    id: row.id,
    ...(row.external_id ? { externalId: row.external_id } : {}),
    userName: row.user_name,
    // A user without a name has no `name` (RFC 7643 §2.5: unassigned attributes are absent, not empty).
    ...(name ? { name } : {}),
    // The e-mails as the client sent them, while they still hold the user's e-mail (the admin API may change it).
    emails: row.scim_emails?.some((e) => e.value.toLowerCase() === row.email.toLowerCase())
      ? row.scim_emails
      : [{ value: row.email, type: 'work', primary: true }],
    active: row.active,
    ...(enterprise ? { [ENTERPRISE_SCHEMA]: enterprise } : {}),
    meta: meta('User', `${usersUrl}/${row.id}`, row.created_at, row.updated_at),
  };
}

export function listResponse<T>(resources: T[], total: number, startIndex: number) {
  return {
    schemas: [LIST_SCHEMA],
    totalResults: total,
    startIndex,
    itemsPerPage: resources.length,
    Resources: resources,
  };
}

const paginationSchema = z.object({
  startIndex: z.coerce
    .number()
    .int()
    .default(1)
    .transform((n) => Math.max(1, n)),
  count: z.coerce
    .number()
    .int()
    .default(100)
    .transform((n) => Math.min(Math.max(0, n), 1000)),
  filter: z.string().max(2000).optional(),
});

/** RFC 7644 §3.4.2.4: startIndex is 1-based (smaller values mean 1), count is capped, never negative. */
export function parseListQuery(query: unknown) {
  const parsed = paginationSchema.extend(selectionSchema.shape).safeParse(query);
  if (!parsed.success) throw new ScimError(400, describeIssues(parsed.error), 'invalidValue');
  return parsed.data;
}

/** A write with If-Match applies only to the version the client saw. */
export function checkIfMatch(req: Request, updatedAt: Date, noun: string): void {
  const expected = req.get('if-match');
  if (expected && expected !== '*' && expected !== versionOf(updatedAt))
    throw new ScimError(412, `the ${noun} changed since version ${expected}`);
}

/** RFC 7644 §3.4.2.5: which attributes an answer carries (`attributes`) or leaves out (`excludedAttributes`). */
export interface Selection {
  attributes?: string;
  excludedAttributes?: string;
}

const selectionSchema = z.object({
  attributes: z.string().max(2000).optional(),
  excludedAttributes: z.string().max(2000).optional(),
});

export function parseSelection(query: unknown): Selection {
  const parsed = selectionSchema.safeParse(query);
  if (!parsed.success) throw new ScimError(400, describeIssues(parsed.error), 'invalidValue');
  return parsed.data;
}

/** Attributes every answer keeps whatever the selection. */
const ALWAYS_RETURNED = new Set(['id', 'schemas']);

/**
 * A selection name as [attribute key of the resource, sub-attribute key] (case-insensitive, the core schema's URN
 * prefix optional, an extension's attributes under its URN), or undefined when the resource has no such attribute.
 * Only keys the resource itself has are ever used, so a name cannot reach anything else.
 */
function resolveName(resource: Record<string, unknown>, raw: string): [string, string | undefined] | undefined {
  const name = raw.trim().replace(/^urn:ietf:params:scim:schemas:core:2\.0:(User|Group):/i, '');
  const keys = Object.keys(resource);
  const lower = name.toLowerCase();
  const urn = keys
    .filter((k) => k.startsWith('urn:') && lower.startsWith(`${k.toLowerCase()}:`))
    .sort((a, b) => b.length - a.length)[0];
  const [top, sub] = urn ? [urn, name.slice(urn.length + 1)] : name.split('.', 2);
  const key = urn ?? keys.find((k) => k.toLowerCase() === top.toLowerCase());
  if (!key) return undefined;
  if (sub === undefined) return [key, undefined];
  const value = resource[key];
  const inner = (Array.isArray(value) ? value : [value]).filter(
    (v): v is Record<string, unknown> => !!v && typeof v === 'object',
  );
  const subKey = inner.flatMap((v) => Object.keys(v)).find((k) => k.toLowerCase() === sub.toLowerCase());
  return subKey ? [key, subKey] : undefined;
}

type Attributes = Record<string, unknown>;

/** One sub-attribute of a complex attribute, or of each value of a multi-valued one. */
const pick = (value: unknown, subKey: string): Attributes | Attributes[] =>
  Array.isArray(value)
    ? value.map((v) => ({ [subKey]: (v as Attributes | null)?.[subKey] }))
    : { [subKey]: (value as Attributes)[subKey] };

/** The resource as the selection asks; `id` and `schemas` always stay. */
export function project<T extends Record<string, unknown>>(resource: T, selection: Selection): Record<string, unknown> {
  const names = (list?: string) => (list ?? '').split(',').filter((n) => n.trim() !== '');
  if (selection.attributes !== undefined && names(selection.attributes).length > 0) {
    const result: Record<string, unknown> = { schemas: resource.schemas, id: resource.id };
    for (const name of names(selection.attributes)) {
      const found = resolveName(resource, name);
      if (!found) continue;
      const [key, subKey] = found;
      if (subKey === undefined) result[key] = resource[key];
      else if (!(key in result) || result[key] !== resource[key]) {
        const picked = pick(resource[key], subKey);
        const had = result[key];
        result[key] = Array.isArray(picked)
          ? picked.map((p, i) => ({ ...((had as Attributes[] | undefined)?.[i] ?? {}), ...p }))
          : { ...(had ?? {}), ...picked };
      }
    }
    return result;
  }
  const result: Record<string, unknown> = { ...resource };
  for (const name of names(selection.excludedAttributes)) {
    const found = resolveName(resource, name);
    if (!found || ALWAYS_RETURNED.has(found[0])) continue;
    const [key, subKey] = found;
    if (subKey === undefined) delete result[key];
    else if (Array.isArray(result[key]))
      result[key] = (result[key] as Record<string, unknown>[]).map(({ [subKey]: _dropped, ...rest }) => rest);
    else if (result[key] && typeof result[key] === 'object') {
      const { [subKey]: _dropped, ...rest } = result[key] as Record<string, unknown>;
      result[key] = rest;
    }
  }
  return result;
}

/**
 * A search over POST (RFC 7644 §3.4.3): the query of a GET list as a JSON body, the attribute lists as arrays. Turned
 * into the GET list's query, so both take one path.
 */
export const searchRequestSchema = z
  .object({
    schemas: z.array(z.string()).optional(),
    filter: z.string().max(2000).optional(),
    startIndex: z.number().int().optional(),
    count: z.number().int().optional(),
    sortBy: z.string().max(200).optional(),
    sortOrder: z.string().max(20).optional(),
    attributes: z.array(z.string().max(200)).max(100).optional(),
    excludedAttributes: z.array(z.string().max(200)).max(100).optional(),
  })
  .strict();

export function searchRequestQuery(body: unknown): Record<string, string | number | undefined> {
  const parsed = searchRequestSchema.safeParse(body);
  if (!parsed.success) throw new ScimError(400, describeIssues(parsed.error), 'invalidValue');
  const { filter, startIndex, count, attributes, excludedAttributes } = parsed.data;
  return {
    filter,
    startIndex,
    count,
    attributes: attributes?.join(','),
    excludedAttributes: excludedAttributes?.join(','),
  };
}
