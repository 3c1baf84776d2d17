import { z } from 'zod';

/**
 * The shapes of the service's answers, for the OpenAPI document (and so for the tests that check real answers against
 * it). Loose where a resource carries more than the fields named: a client may read fields it does not know.
 */
const text = z.string();
const nullableText = z.string().nullable();

export const problemSchema = z
  .looseObject({
    type: text,
    title: text,
    status: z.number().int(),
    detail: text,
    attemptId: text
      .optional()
      .meta({ description: 'The provisioning attempt behind the answer: its Temporal workflow id, to open in the UI' }),
  })
  .meta({ id: 'Problem', description: 'RFC 9457 problem details; `detail` names the field or app at fault and why' });

export const scimErrorSchema = z
  .looseObject({
    schemas: z.array(z.literal('urn:ietf:params:scim:api:messages:2.0:Error')),
    status: text,
    scimType: text.optional(),
    detail: text,
  })
  .meta({ id: 'ScimError', description: 'RFC 7644 §3.12 error' });

export const userViewSchema = z
  .object({
    userId: text,
    email: text,
    firstName: nullableText,
    lastName: nullableText,
    organizationId: nullableText,
    customAttributes: z.record(z.string(), z.string()),
    active: z.boolean(),
    provisionedApps: z.array(text),
  })
  .meta({ id: 'User', description: 'A user and the apps it is provisioned into' });

export const userPageSchema = z
  .object({
    users: z.array(userViewSchema),
    next: text.nullable().meta({ description: 'pass as `after` for the next page; null on the last page' }),
  })
  .meta({ id: 'UserPage', description: 'Users in e-mail order, a page at a time' });

export const appViewSchema = z
  .object({ appId: text, CallbackUrl: text, TryTimeoutSeconds: z.number().int() })
  .meta({ id: 'ProvisioningApp', description: 'A provisioning app; ApiKey is write-only and never shown' });

export const appProbeSchema = z
  .looseObject({ appId: text, reachable: z.boolean(), approved: z.boolean(), latencyMs: z.number() })
  .meta({ id: 'AppProbe', description: "What the app's Try endpoint answered to a probe" });

export const clientViewSchema = z
  .looseObject({
    ClientId: text,
    ProvisioningApps: z.array(text),
    unsupportedSettings: z.array(z.object({ setting: text, value: z.json(), effect: text })).meta({
      description: 'IdentityServer settings of the client the service does not honour, and what the client will notice',
    }),
  })
  .meta({ id: 'Client', description: 'An OAuth/OpenID Connect client; secrets are write-only' });

export const ssoProviderViewSchema = z
  .looseObject({ id: text, name: text, domains: z.array(text) })
  .meta({ id: 'SsoProvider', description: 'An upstream SAML or OpenID Connect provider and its SSO domains' });

export const registrationPendingSchema = z.object({ email: text, detail: text }).meta({
  id: 'RegistrationPending',
  description:
    'Auth:RequireConfirmedEmail: the same answer whether or not the address was free; the mail says what happened',
});

export const scimTokenSchema = z
  .looseObject({ id: text, description: nullableText })
  .meta({ id: 'ScimToken', description: 'A SCIM bearer token as listed: never its value' });

export const newScimTokenSchema = z
  .object({ id: text, token: text })
  .meta({ id: 'NewScimToken', description: 'A SCIM bearer token just made: its value is shown this once' });

export const healthSchema = z
  .object({ status: z.enum(['ok', 'unavailable']), store: text, temporal: text })
  .meta({ id: 'Health' });

export const migrationStatusSchema = z
  .looseObject({ version: text, state: z.enum(['NotStarted', 'Started', 'Completed', 'Failed']) })
  .meta({ id: 'MigrationStatus', description: 'The marker of Migration:Version, its progress and report' });

export const scimResourceSchema = z
  .looseObject({ schemas: z.array(text), id: text.optional() })
  .meta({ id: 'ScimResource', description: 'A SCIM resource (RFC 7643): User, Group, or a discovery resource' });

export const scimListSchema = z
  .looseObject({
    schemas: z.array(z.literal('urn:ietf:params:scim:api:messages:2.0:ListResponse')),
    totalResults: z.number().int(),
    Resources: z.array(scimResourceSchema),
  })
  .meta({ id: 'ScimListResponse' });

export const auditEventsSchema = z
  .object({
    events: z.array(
      z.object({
        id: text,
        at: text,
        type: text,
        userId: text.nullable(),
        clientId: text.nullable(),
        clientAddress: text.nullable(),
        actor: text.nullable().meta({ description: 'who acted when not the user: admin-key, user:{id}, client:{id}' }),
        detail: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
      }),
    ),
    next: text.nullable().meta({ description: 'pass as `before` for the next (older) page; null on the last page' }),
  })
  .meta({ id: 'AuditEvents', description: 'Account events, newest first' });
