import { z } from 'zod';
import { searchRequestSchema } from '../../scim/resource-shapes';
import type { RouteSpec } from './route-spec';
import { scimListSchema, scimResourceSchema } from './schemas';

export const scimList = { description: 'A page of resources', body: scimListSchema };
export const scimResource = (description: string) => ({ description, body: scimResourceSchema });

/** What the routes of one resource type share: where it lives, its operations' noun and what it can be refused with. */
interface ResourceType {
  type: 'Users' | 'Groups';
  base: string;
  noun: 'ScimUser' | 'ScimGroup';
  /** Why an app refused a user (the admin API's 422 answer). */
  unprovisionable: string;
}

const scim = { tag: 'SCIM' as const, auth: 'scim' as const };

/** Listing, searching and reading one resource. */
function readRoutes({ type, base, noun }: ResourceType): RouteSpec[] {
  const query = z.object({
    filter: z.string().max(2000).optional(),
    startIndex: z.coerce.number().int().optional(),
    count: z.coerce.number().int().optional(),
    attributes: z.string().max(2000).optional(),
    excludedAttributes: z.string().max(2000).optional(),
  });
  return [
    {
      ...scim,
      operationId: `list${noun}s`,
      method: 'get',
      path: base,
      summary: `List or filter ${type}`,
      query,
      answers: { 200: scimList },
    },
    {
      ...scim,
      operationId: `search${noun}s`,
      method: 'post',
      path: `${base}/.search`,
      summary: `Search ${type} (the query as a body)`,
      body: searchRequestSchema,
      answers: { 200: scimList },
    },
    {
      ...scim,
      operationId: `get${noun}`,
      method: 'get',
      path: `${base}/{id}`,
      summary: `Read one of ${type}`,
      answers: { 200: scimResource('The resource'), 304: 'Not modified (If-None-Match)', 404: 'No such resource' },
    },
  ];
}

/** Replacing, modifying and deleting one resource; a user's changes run as workflows. */
function changeRoutes({ type, base, noun, unprovisionable }: ResourceType, input: z.ZodType): RouteSpec[] {
  const one = `${base}/{id}`;
  // What a replace or a modification of one resource can be refused with.
  const changeRefusals = {
    404: 'No such resource',
    409: 'The userName or e-mail is taken',
    412: 'The If-Match version is not the current one',
    422: unprovisionable,
  };
  return [
    {
      ...scim,
      operationId: `replace${noun}`,
      method: 'put',
      path: one,
      summary: `Replace one of ${type}`,
      body: input,
      workflow: type === 'Users',
      answers: { 200: scimResource('Replaced'), ...changeRefusals },
    },
    {
      ...scim,
      operationId: `modify${noun}`,
      method: 'patch',
      path: one,
      summary: `Modify one of ${type} (RFC 7644 §3.5.2)`,
      body: z.looseObject({ schemas: z.array(z.string()), Operations: z.array(z.looseObject({ op: z.string() })) }),
      workflow: type === 'Users',
      answers: { 200: scimResource('Modified'), 204: 'Modified', ...changeRefusals },
    },
    {
      ...scim,
      operationId: `delete${noun}`,
      method: 'delete',
      path: one,
      summary:
        type === 'Users'
          ? 'Delete a user: deactivated and deprovisioned, then 404 to SCIM (the record stays for the admin API)'
          : 'Delete a group',
      workflow: type === 'Users',
      answers: { 204: 'Done', 404: 'No such resource', 412: 'The If-Match version is not the current one' },
    },
  ];
}

/** The SCIM operations one resource type (Users, Groups) answers, in the order the API reference lists them. */
export function scimResourceRoutes(
  type: 'Users' | 'Groups',
  input: z.ZodType,
  creates: string,
  unprovisionable: string,
): RouteSpec[] {
  const resource: ResourceType = {
    type,
    base: `/scim/v2/${type}`,
    noun: type === 'Users' ? 'ScimUser' : 'ScimGroup',
    unprovisionable,
  };
  const [list, search, get] = readRoutes(resource);
  const create: RouteSpec = {
    ...scim,
    operationId: `create${resource.noun}`,
    method: 'post',
    path: resource.base,
    summary: creates,
    body: input,
    workflow: type === 'Users',
    answers: { 201: scimResource('Created'), 409: 'The userName or e-mail is taken', 422: unprovisionable },
  };
  return [list, search, create, get, ...changeRoutes(resource, input)];
}
