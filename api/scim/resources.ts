import type { Request } from 'express';
import { patchBodyValidation, scimPatch, type ScimPatch, type ScimResource } from 'scim-patch';
import { z } from 'zod';
import { describeIssues } from '../problem';
import { forbiddenPathSegment } from '../../security/object-keys';
import { ScimError } from './errors';
import type { ScimUserRow } from '../../store/scim-users';

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

const optionalText = z.string().trim().max(256).nullish();

/** What this service keeps of a SCIM user; other attributes (enterprise extension, phone numbers, …) are accepted and ignored. */
export const scimUserInputSchema = z.looseObject({
  userName: z.string().trim().min(1).max(256),
  externalId: optionalText,
  name: z.looseObject({ givenName: optionalText, familyName: optionalText }).nullish(),
  emails: z
    .array(z.looseObject({ value: z.string().trim(), type: z.string().nullish(), primary: scimBoolean.nullish() }))
    .nullish(),
  active: scimBoolean.optional(),
  password: z.string().max(1024).optional(),
});

export type ScimUserInput = z.infer<typeof scimUserInputSchema>;

const emailSchema = z.email();

/** The primary e-mail, else the work one, else the first, else a userName that is an e-mail address. */
export function chooseEmail(input: ScimUserInput): string | undefined {
  const emails = input.emails ?? [];
  const chosen = emails.find((e) => e.primary) ?? emails.find((e) => e.type === 'work') ?? emails[0];
  const candidate = chosen?.value ?? input.userName;
  return emailSchema.safeParse(candidate).success ? candidate : undefined;
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
  return {
    schemas: [USER_SCHEMA],
    id: row.id,
    ...(row.external_id ? { externalId: row.external_id } : {}),
    userName: row.user_name,
    name: {
      ...(row.first_name ? { givenName: row.first_name } : {}),
      ...(row.last_name ? { familyName: row.last_name } : {}),
      ...(row.first_name || row.last_name
        ? { formatted: [row.first_name, row.last_name].filter(Boolean).join(' ') }
        : {}),
    },
    emails: [{ value: row.email, type: 'work', primary: true }],
    active: row.active,
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
  const parsed = paginationSchema.safeParse(query);
  if (!parsed.success) throw new ScimError(400, describeIssues(parsed.error), 'invalidValue');
  return parsed.data;
}

/** A write with If-Match applies only to the version the client saw. */
export function checkIfMatch(req: Request, updatedAt: Date, noun: string): void {
  const expected = req.get('if-match');
  if (expected && expected !== '*' && expected !== versionOf(updatedAt))
    throw new ScimError(412, `the ${noun} changed since version ${expected}`);
}

/** RFC 7644 §3.5.2 PATCH applied to the resource as the client sees it; the result is then validated like a PUT body. */
/**
 * Microsoft Entra ID removes group members with `{"op":"Remove","path":"members","value":[{"value":"<id>"}]}`,
 * which scim-patch ignores: each listed member becomes a `remove` of `members[value eq "<id>"]` (RFC 7644 §3.5.2.2).
 * Without a value, `remove` of `members` removes them all, as scim-patch does.
 */
function expandMemberRemovals(operations: unknown[]): unknown[] {
  return operations.flatMap((operation) => {
    const { op, path, value } = (operation ?? {}) as { op?: unknown; path?: unknown; value?: unknown };
    if (typeof op !== 'string' || op.toLowerCase() !== 'remove') return [operation];
    if (typeof path !== 'string' || path.trim().toLowerCase() !== 'members' || !Array.isArray(value))
      return [operation];
    return value.map((member) => {
      const id = (member as { value?: unknown } | null)?.value;
      if (typeof id !== 'string' || id.length > 256 || /["\\]/.test(id))
        throw new ScimError(
          400,
          'Operations.value: each member to remove needs a value, the member id',
          'invalidValue',
        );
      return { op: 'remove', path: `members[value eq "${id}"]` };
    });
  });
}

export function applyPatch(resource: object, body: unknown): unknown {
  const given = (body as { Operations?: unknown } | null)?.Operations;
  const operations = Array.isArray(given) ? expandMemberRemovals(given) : given;
  body = { ...(body as object), Operations: operations };
  for (const operation of Array.isArray(operations) ? operations : []) {
    const path = (operation as { path?: unknown } | null)?.path;
    const forbidden = typeof path === 'string' ? forbiddenPathSegment(path) : undefined;
    if (forbidden)
      throw new ScimError(400, `Operations.path: the attribute name "${forbidden}" is not allowed`, 'invalidPath');
  }
  try {
    patchBodyValidation(body as ScimPatch);
    // scim-patch types meta dates as Date; it never reads them.
    return scimPatch(resource as unknown as ScimResource, (body as ScimPatch).Operations, {
      mutateDocument: false,
      treatMissingAsAdd: true,
    });
  } catch (error) {
    throw new ScimError(400, (error as Error).message, 'invalidSyntax');
  }
}
