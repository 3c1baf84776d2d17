import { ENTERPRISE_ATTRIBUTES, ENTERPRISE_SCHEMA, GROUP_SCHEMA, NAME_PARTS, USER_SCHEMA } from './resource-shapes';

/** One attribute as RFC 7643 §7 describes it; what /Schemas publishes and what PATCH paths are checked against. */
export interface AttributeDefinition {
  name: string;
  type: string;
  multiValued: boolean;
  required: boolean;
  caseExact: boolean;
  mutability: 'readOnly' | 'readWrite' | 'immutable' | 'writeOnly';
  returned: string;
  uniqueness: string;
  description?: string;
  canonicalValues?: string[];
  referenceTypes?: string[];
  subAttributes?: AttributeDefinition[];
}

const attribute = (name: string, type: string, extra: Partial<AttributeDefinition> = {}): AttributeDefinition => ({
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

const text = (name: string) => attribute(name, 'string');

/** Only the attributes this service keeps are described; each is answered as the client sent it. */
export const SCHEMAS: Array<{ id: string; name: string; description: string; attributes: AttributeDefinition[] }> = [
  {
    id: USER_SCHEMA,
    name: 'User',
    description: 'User account',
    attributes: [
      attribute('userName', 'string', { required: true, uniqueness: 'server' }),
      attribute('externalId', 'string', { caseExact: true }),
      attribute('name', 'complex', {
        subAttributes: NAME_PARTS.map(text),
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
      ...ENTERPRISE_ATTRIBUTES.map(text),
      attribute('manager', 'complex', {
        // Kept as sent: the manager's id need not be a user of this service, so nothing is looked up or rebuilt.
        subAttributes: [
          text('value'),
          attribute('$ref', 'reference', { referenceTypes: ['User'] }),
          text('displayName'),
        ],
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
        description:
          'Users only (a member of type Group is refused); each member is answered as sent, in the order sent.',
        subAttributes: [
          attribute('value', 'string', { mutability: 'immutable', required: true }),
          attribute('display', 'string', { mutability: 'immutable' }),
          attribute('type', 'string', { mutability: 'immutable', canonicalValues: ['User'] }),
          attribute('$ref', 'reference', { mutability: 'immutable', referenceTypes: ['User'] }),
        ],
      }),
    ],
  },
];

/** RFC 7643 §3.1: the attributes every resource has, which no client sets. */
export const COMMON_ATTRIBUTES: AttributeDefinition[] = [
  attribute('id', 'string', { mutability: 'readOnly', caseExact: true }),
  attribute('schemas', 'reference', { mutability: 'readOnly', multiValued: true }),
  attribute('meta', 'complex', {
    mutability: 'readOnly',
    subAttributes: ['resourceType', 'created', 'lastModified', 'location', 'version'].map((name) =>
      attribute(name, 'string', { mutability: 'readOnly' }),
    ),
  }),
];

/**
 * Attributes of RFC 7643's core User schema this service does not keep: Entra and Okta send them (`displayName` on
 * every update), so a PATCH naming them is accepted and ignored, as POST and PUT ignore them. Any other name is
 * refused (invalidPath).
 */
export const IGNORED_USER_ATTRIBUTES = [
  'displayName',
  'nickName',
  'profileUrl',
  'title',
  'userType',
  'preferredLanguage',
  'locale',
  'timezone',
  'phoneNumbers',
  'ims',
  'photos',
  'addresses',
  'entitlements',
  'roles',
  'x509Certificates',
];

/** What a PATCH of one resource type may name: its core schema's attributes and its extensions'. */
export interface ResourceSchema {
  noun: 'User' | 'Group';
  core: string;
  attributes: AttributeDefinition[];
  extensions: Record<string, AttributeDefinition[]>;
  ignored: string[];
}

const attributesOf = (id: string) => SCHEMAS.find((s) => s.id === id)!.attributes;

export const USER_RESOURCE_SCHEMA: ResourceSchema = {
  noun: 'User',
  core: USER_SCHEMA,
  attributes: [...COMMON_ATTRIBUTES, ...attributesOf(USER_SCHEMA)],
  extensions: { [ENTERPRISE_SCHEMA]: attributesOf(ENTERPRISE_SCHEMA) },
  ignored: IGNORED_USER_ATTRIBUTES,
};

export const GROUP_RESOURCE_SCHEMA: ResourceSchema = {
  noun: 'Group',
  core: GROUP_SCHEMA,
  attributes: [...COMMON_ATTRIBUTES, ...attributesOf(GROUP_SCHEMA)],
  extensions: {},
  ignored: [],
};
