import type { RequestHandler, Response } from 'express';
import { pathParam, type Operations } from '../platform/http/operations';
import { ScimError, SCIM_CONTENT_TYPE } from '../platform/http/scim-errors';
import { ENTERPRISE_ATTRIBUTES, ENTERPRISE_SCHEMA, GROUP_SCHEMA, listResponse, USER_SCHEMA } from './resources';

const attribute = (name: string, type: string, extra: Record<string, unknown> = {}) => ({
  name,
  type,
  multiValued: false,
  required: false,
  caseExact: false,
  mutability: 'readWrite',
  returned: 'default',
  uniqueness: 'none',
  ...extra,
});

/** Only the attributes this service keeps are described; others are accepted and ignored. */
const schemas = [
  {
    id: USER_SCHEMA,
    name: 'User',
    description: 'User account',
    attributes: [
      attribute('userName', 'string', { required: true, uniqueness: 'server' }),
      attribute('externalId', 'string', { caseExact: true }),
      attribute('name', 'complex', {
        subAttributes: [
          attribute('givenName', 'string'),
          attribute('familyName', 'string'),
          attribute('formatted', 'string', { mutability: 'readOnly' }),
        ],
      }),
      attribute('emails', 'complex', {
        multiValued: true,
        // Every downstream app's Try carries the user's e-mail, so the service needs one (a userName that is an
        // e-mail address also counts).
        required: true,
        description:
          "At least one e-mail address: the primary one (else the work one, else the first) is the user's e-mail. A userName that is an e-mail address counts as one.",
        subAttributes: [
          attribute('value', 'string', { required: true }),
          attribute('type', 'string', { canonicalValues: ['work', 'home', 'other'] }),
          attribute('primary', 'boolean'),
        ],
      }),
      attribute('active', 'boolean'),
      attribute('password', 'string', { mutability: 'writeOnly', returned: 'never' }),
    ],
  },
  {
    id: ENTERPRISE_SCHEMA,
    name: 'EnterpriseUser',
    description:
      "Enterprise User. Kept as the user's custom attributes under their plain names (manager as its id), which every downstream app receives.",
    attributes: [
      ...ENTERPRISE_ATTRIBUTES.map((name) => attribute(name, 'string')),
      attribute('manager', 'complex', {
        subAttributes: [attribute('value', 'string'), attribute('$ref', 'reference', { mutability: 'readOnly' })],
      }),
    ],
  },
  {
    id: GROUP_SCHEMA,
    name: 'Group',
    description: 'Group',
    attributes: [
      attribute('displayName', 'string', { required: true, uniqueness: 'server' }),
      attribute('externalId', 'string', { caseExact: true }),
      attribute('members', 'complex', {
        multiValued: true,
        subAttributes: [
          attribute('value', 'string', { mutability: 'immutable', required: true }),
          attribute('display', 'string', { mutability: 'readOnly' }),
          // What each member answered carries (api/scim/groups.ts): only users are members.
          attribute('type', 'string', { mutability: 'immutable', canonicalValues: ['User'] }),
          attribute('$ref', 'reference', { mutability: 'immutable', referenceTypes: ['User'] }),
        ],
      }),
    ],
  },
];

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
