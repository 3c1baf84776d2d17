import type { RequestHandler, Response } from 'express';
import { pathParam, type Operations } from '../platform/http/operations';
import { ScimError, SCIM_CONTENT_TYPE } from './scim-errors';
import { ENTERPRISE_SCHEMA, GROUP_SCHEMA, listResponse, USER_SCHEMA } from './resource-shapes';
import { SCHEMAS as schemas } from './published-schemas';

export function scimDiscoveryOperations(scimUrl: string, documentationUrl: string): Operations {
  const send = (res: Response, body: unknown) => res.type(SCIM_CONTENT_TYPE).json(body);

  const serviceProviderConfig = {
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig'],
    documentationUri: documentationUrl,
    patch: { supported: true },
    bulk: { supported: false, maxOperations: 0, maxPayloadSize: 0 },
    filter: { supported: true, maxResults: 1000 },
    changePassword: { supported: true },
    sort: { supported: false },
    etag: { supported: true },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'Bearer token',
        description: 'A token created with POST /api/v1/scim/tokens',
        primary: true,
      },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${scimUrl}/ServiceProviderConfig` },
  };

  const resourceTypes = [
    {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
      id: 'User',
      name: 'User',
      endpoint: '/Users',
      schema: USER_SCHEMA,
      schemaExtensions: [{ schema: ENTERPRISE_SCHEMA, required: false }],
      meta: { resourceType: 'ResourceType', location: `${scimUrl}/ResourceTypes/User` },
    },
    {
      schemas: ['urn:ietf:params:scim:schemas:core:2.0:ResourceType'],
      id: 'Group',
      name: 'Group',
      endpoint: '/Groups',
      schema: GROUP_SCHEMA,
      meta: { resourceType: 'ResourceType', location: `${scimUrl}/ResourceTypes/Group` },
    },
  ];
  const withMeta = schemas.map((s) => ({
    ...s,
    schemas: ['urn:ietf:params:scim:schemas:core:2.0:Schema'],
    meta: { resourceType: 'Schema', location: `${scimUrl}/Schemas/${s.id}` },
  }));
  const oneOf =
    <T extends { id: string }>(items: T[], noun: string): RequestHandler =>
    (req, res) => {
      const id = pathParam(req, 'id');
      const found = items.find((item) => item.id === id);
      if (!found) throw new ScimError(404, `no ${noun} ${id}`);
      send(res, found);
    };
  return {
    getScimServiceProviderConfig: (_req, res) => send(res, serviceProviderConfig),
    listScimResourceTypes: (_req, res) => send(res, listResponse(resourceTypes, 2, 1)),
    getScimResourceType: oneOf(resourceTypes, 'resource type'),
    listScimSchemas: (_req, res) => send(res, listResponse(withMeta, schemas.length, 1)),
    getScimSchema: oneOf(withMeta, 'schema'),
  };
}

/** The discovery endpoints are read-only (RFC 7644 §4): any other method is 405, in SCIM's error schema. */
export const DISCOVERY_PATHS = [
  '/ServiceProviderConfig',
  '/ResourceTypes',
  '/ResourceTypes/:id',
  '/Schemas',
  '/Schemas/:id',
];
