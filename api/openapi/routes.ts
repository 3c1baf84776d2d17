import { z } from 'zod';
import { clientBodySchema } from '../../sign-in/api/client-endpoints';
import { createProfileSchema } from '../../provisioning/api/profile';
import { profileChangesSchema, userQuerySchema } from '../../provisioning/api/user-directory';
import { appBodySchema } from '../../provisioning/api/app-body';
import { registrationSchema } from '../../sign-in/api/register';
import { scimTokenCreateSchema } from '../../scim/tokens';
import { oidcProviderSchema, samlProviderSchema } from '../../sign-in/api/sso-providers';
import { groupInputSchema } from '../../scim/group-endpoints';
import { auditQuerySchema } from '../../sign-in/api/account-admin';
import { scimUserInputSchema } from '../../scim/resource-shapes';
import { scimList, scimResource, scimResourceRoutes } from './scim-resource-routes';
import type { Answer, RouteSpec, Tag } from './route-spec';
import {
  appProbeSchema,
  appViewSchema,
  auditEventsSchema,
  clientViewSchema,
  healthSchema,
  migrationStatusSchema,
  newScimTokenSchema,
  registrationPendingSchema,
  scimTokenSchema,
  ssoProviderViewSchema,
  userPageSchema,
  userViewSchema,
} from './schemas';

const APPS_ABSENT =
  'Provisioning apps are managed through the API only with Provisioning:AppProvider: "Store"; with the default, "Configuration", they are read from the ProvisioningApps section (docs/provisioning.md)';
const RESET_REFUSALS: Record<number, Answer> = {
  409: 'The user is deactivated',
  429: 'The user was sent the most reset mails Auth:PasswordReset allows in its window',
};
const SIGN_IN_ABSENT =
  'The route exists only where sign-in does (a data-protection key): the mail links to the sign-in pages';
const OIDC_PROVIDERS_ABSENT =
  "The routes exist only where the service has a data-protection key (an upstream provider's client secret is sealed at rest)";
const list = <T extends z.ZodType>(item: T) => z.array(item);
const USER_ANSWERS = {
  409: 'A user with this e-mail exists, or an attempt for it is still running',
  422: 'An app rejected the user or failed (the new user is deleted), or the client names unknown apps',
  502: 'An app failed to confirm after others confirmed; the user is kept and a retry provisions the rest',
};
/** The SCIM discovery resources (RFC 7644 §4): public to any SCIM token, GET only. */
const scimDiscovery: RouteSpec[] = (
  [
    ['getScimServiceProviderConfig', '/scim/v2/ServiceProviderConfig', 'What the service supports of SCIM', false],
    ['listScimResourceTypes', '/scim/v2/ResourceTypes', 'The resource types', true],
    ['getScimResourceType', '/scim/v2/ResourceTypes/{id}', 'One resource type', false],
    ['listScimSchemas', '/scim/v2/Schemas', 'The schemas', true],
    ['getScimSchema', '/scim/v2/Schemas/{id}', 'One schema', false],
  ] as const
).map(([operationId, path, summary, listed]): RouteSpec => ({
  operationId,
  method: 'get',
  path,
  summary,
  tag: 'SCIM',
  auth: 'scim',
  answers: listed
    ? { 200: scimList }
    : path.endsWith('}')
      ? { 200: scimResource(summary), 404: 'Unknown id' }
      : { 200: scimResource(summary) },
}));

/** A store-backed admin collection: list, read, create or replace, delete. */
function adminCollection(
  base: string,
  tag: Tag,
  /** The noun of the operationIds: listClients, getClient, … */
  operation: string,
  noun: string,
  view: z.ZodType,
  input: z.ZodType,
  {
    create = true,
    conflict = `${noun} exists, or one of its values belongs to another`,
    /** Why the whole collection may answer 404 (routes that exist only in some configurations). */
    absent = undefined as string | undefined,
    /** The path parameter naming one member. */
    param = 'id',
    /** Why a member may not be deleted now (something else still uses it), if ever. */
    inUse = undefined as string | undefined,
  } = {},
): RouteSpec[] {
  const admin = { tag, auth: 'admin' as const };
  const one = `${base}/{${param}}`;
  const routes: RouteSpec[] = [
    {
      ...admin,
      operationId: `list${operation}s`,
      method: 'get',
      path: base,
      summary: `List ${noun}s`,
      answers: { 200: { description: noun, body: list(view) } },
    },
    {
      ...admin,
      operationId: `get${operation}`,
      method: 'get',
      path: one,
      summary: `Read a ${noun}`,
      answers: { 200: { description: noun, body: view }, 404: `No such ${noun}` },
    },
    ...(create
      ? [
          {
            ...admin,
            operationId: `create${operation}`,
            method: 'post' as const,
            path: base,
            summary: `Create a ${noun}`,
            body: input,
            answers: { 201: { description: 'Created', body: view }, 409: conflict },
          },
        ]
      : []),
    {
      ...admin,
      operationId: `replace${operation}`,
      method: 'put',
      path: one,
      summary: `Replace a ${noun}`,
      body: input,
      answers: {
        200: { description: 'Replaced', body: view },
        // Without POST, PUT is also how one is created.
        ...(create ? { 404: `No such ${noun}`, 409: conflict } : { 201: { description: 'Created', body: view } }),
      },
    },
    {
      ...admin,
      operationId: `delete${operation}`,
      method: 'delete',
      path: one,
      summary: `Delete a ${noun}`,
      answers: inUse
        ? { 204: 'Deleted', 404: `No such ${noun}`, 409: inUse }
        : { 204: 'Deleted', 404: `No such ${noun}` },
    },
  ];
  return absent ? routes.map((route) => ({ ...route, absent, answers: { 404: absent, ...route.answers } })) : routes;
}

/**
 * Every HTTP route of the service's API, once: the app mounts each route's handler from this table (api/app.ts), the
 * OpenAPI document is built from it, and request metrics and access-log lines are labelled with its templates. The
 * sign-in pages and protocol endpoints (platform/http/sign-in-paths.ts) are documented by their own standards.
 */
export const ROUTES: RouteSpec[] = [
  {
    operationId: 'createUser',
    method: 'post',
    path: '/api/v1/profile',
    summary: 'Create a user and provision it into every configured app',
    tag: 'Users',
    auth: 'admin',
    body: createProfileSchema,
    workflow: true,
    answers: { 201: { description: 'Created and provisioned', body: userViewSchema }, ...USER_ANSWERS },
  },
  {
    operationId: 'listUsers',
    method: 'get',
    path: '/api/v1/profile',
    summary:
      'List users a page at a time, in e-mail order, optionally searched (e-mail, name, id); or, with `email`, find one user',
    tag: 'Users',
    auth: 'admin',
    query: userQuerySchema,
    answers: {
      200: {
        description: 'A page of users (`email`: the user)',
        body: z.union([userPageSchema, userViewSchema]),
      },
      400: 'A parameter is not valid (an `after` that is no `next` of this API included); `detail` names it',
      404: 'With `email`: no user with this e-mail',
    },
  },
  {
    operationId: 'getUser',
    method: 'get',
    path: '/api/v1/profile/{userId}',
    summary: 'Read a user',
    tag: 'Users',
    auth: 'admin',
    answers: { 200: { description: 'The user', body: userViewSchema }, 404: 'No such user' },
  },
  {
    operationId: 'updateUser',
    method: 'patch',
    path: '/api/v1/profile/{userId}',
    summary:
      'Change names, e-mail, custom attributes (merged; null removes one) or active (false ends the sessions and deprovisions, true provisions again)',
    tag: 'Users',
    auth: 'admin',
    body: profileChangesSchema,
    workflow: true,
    answers: {
      200: { description: 'The user as changed', body: userViewSchema },
      404: 'No such user',
      409: 'Another user holds the e-mail',
      422: 'Reactivation: an app rejected the user or failed (the user stays inactive)',
    },
  },
  {
    operationId: 'deleteUser',
    method: 'delete',
    path: '/api/v1/profile/{userId}',
    summary: 'Delete a user, then deprovision it from every app it was provisioned into',
    tag: 'Users',
    auth: 'admin',
    workflow: true,
    answers: { 204: 'Deleted', 404: 'No such user', 409: 'A deletion of this user is still running' },
  },
  {
    operationId: 'retryProvisioning',
    method: 'post',
    path: '/api/v1/profile/{userId}/provisioning',
    summary: 'Retry provisioning: only the apps the user is not provisioned into yet',
    tag: 'Users',
    auth: 'admin',
    workflow: true,
    answers: { 200: { description: 'Provisioned', body: userViewSchema }, 404: 'No such user', ...USER_ANSWERS },
  },
  ...(
    [
      ['unlockUser', 'post', 'unlock', 'Clear the lockout and the failed-attempt count', 204, 'Unlocked'],
      [
        'removeUserMfa',
        'delete',
        'mfa',
        'Remove the authenticator and recovery codes; two-step verification off',
        204,
        'Removed',
      ],
      [
        'endUserSessions',
        'delete',
        'sessions',
        "End every session, refresh token and grant of the user (the service's admin tokens of the user too)",
        204,
        'Ended',
      ],
      [
        'sendPasswordReset',
        'post',
        'password-reset',
        'Send the password-reset mail (for a user without a password: how to sign in)',
        202,
        'Sent (or queued with the mail server)',
      ],
    ] as const
  ).map(([operationId, method, action, summary, status, done]): RouteSpec => ({
    operationId,
    method,
    path: `/api/v1/profile/{userId}/${action}`,
    summary,
    tag: 'Users',
    auth: 'admin',
    ...(operationId === 'sendPasswordReset' && { absent: SIGN_IN_ABSENT }),
    answers: { [status]: done, 404: 'No such user', ...(operationId === 'sendPasswordReset' ? RESET_REFUSALS : {}) },
  })),
  {
    operationId: 'listAuditEvents',
    method: 'get',
    path: '/api/v1/audit-events',
    summary: 'Account events (sign-ins, lockouts, MFA, resets, admin actions), newest first, a page at a time',
    tag: 'Users',
    auth: 'admin',
    query: auditQuerySchema,
    answers: { 200: { description: 'A page of events', body: auditEventsSchema } },
  },
  {
    operationId: 'register',
    method: 'post',
    path: '/api/auth/register',
    summary: 'Self-service registration (provisions into every configured app)',
    tag: 'Registration',
    auth: 'public',
    body: registrationSchema,
    workflow: true,
    absent: 'The route exists only with Auth:AllowRegistration = true (the default)',
    answers: {
      404: 'The route exists only with Auth:AllowRegistration = true (the default)',
      201: { description: 'Registered and provisioned', body: userViewSchema },
      202: {
        description:
          'With Auth:RequireConfirmedEmail, for a new and a taken address alike: a confirmation link, or a notice to the owner, was mailed',
        body: registrationPendingSchema,
      },
      ...USER_ANSWERS,
      429: 'Too many registrations from this address; Retry-After says when to come back',
    },
  },
  ...adminCollection('/api/v1/clients', 'Clients', 'Client', 'client', clientViewSchema, clientBodySchema, {
    create: false,
    param: 'clientId',
  }),
  ...adminCollection(
    '/api/v1/sso/oidc-providers',
    'SSO providers',
    'OidcProvider',
    'OIDC provider',
    ssoProviderViewSchema,
    oidcProviderSchema,
    { absent: OIDC_PROVIDERS_ABSENT },
  ),
  ...adminCollection(
    '/api/v1/sso/saml-providers',
    'SSO providers',
    'SamlProvider',
    'SAML provider',
    ssoProviderViewSchema,
    samlProviderSchema,
  ),
  ...adminCollection(
    '/api/v1/provisioning/apps',
    'Provisioning apps',
    'ProvisioningApp',
    'provisioning app',
    appViewSchema,
    appBodySchema,
    { absent: APPS_ABSENT, param: 'appId', inUse: 'Clients list the app in ProvisioningApps (named in the detail)' },
  ),
  {
    operationId: 'probeProvisioningApp',
    method: 'post',
    path: '/api/v1/provisioning/apps/{appId}/test',
    summary: "Probe the app's Try endpoint (an approved probe is cancelled at once)",
    tag: 'Provisioning apps',
    auth: 'admin',
    absent: APPS_ABSENT,
    answers: {
      200: { description: 'What the app answered', body: appProbeSchema },
      400: "The app's CallbackUrl is refused now (see Auth:AllowedInternalTargets)",
      404: `No such provisioning app. ${APPS_ABSENT}`,
    },
  },
  {
    operationId: 'createScimToken',
    method: 'post',
    path: '/api/v1/scim/tokens',
    summary: 'Make a SCIM bearer token',
    tag: 'SCIM',
    auth: 'admin',
    body: scimTokenCreateSchema,
    answers: { 201: { description: 'Made; the value is shown only now', body: newScimTokenSchema } },
  },
  {
    operationId: 'listScimTokens',
    method: 'get',
    path: '/api/v1/scim/tokens',
    summary: 'List SCIM tokens (never their values)',
    tag: 'SCIM',
    auth: 'admin',
    answers: { 200: { description: 'The tokens', body: list(scimTokenSchema) } },
  },
  {
    operationId: 'revokeScimToken',
    method: 'delete',
    path: '/api/v1/scim/tokens/{id}',
    summary: 'Revoke a SCIM token',
    tag: 'SCIM',
    auth: 'admin',
    answers: { 204: 'Revoked', 404: 'No such token' },
  },
  ...scimResourceRoutes(
    'Users',
    scimUserInputSchema,
    'Create a user and provision it into every configured app',
    USER_ANSWERS[422],
  ),
  ...scimResourceRoutes('Groups', groupInputSchema, 'Create a group', USER_ANSWERS[422]),
  ...scimDiscovery,
  {
    operationId: 'searchScimResources',
    method: 'post',
    path: '/scim/v2/.search',
    summary: 'Search across resource types: not supported (POST /Users/.search or /Groups/.search)',
    tag: 'SCIM',
    auth: 'scim',
    answers: { 501: 'Not supported' },
  },
  {
    operationId: 'getMigrationStatus',
    method: 'get',
    path: '/admin/migration/status',
    summary: 'Migration progress and report (404 when not mapped, and to anyone but an IdentityAdmin)',
    tag: 'Operations',
    auth: 'public',
    absent: 'The route exists only with Migration:MapStatusEndpoint = true',
    answers: {
      200: { description: 'The marker of Migration:Version', body: migrationStatusSchema },
      404: 'Not found',
      503: 'The store could not be reached; send again after Retry-After',
    },
  },
  {
    operationId: 'getHealth',
    method: 'get',
    path: '/healthz',
    summary: 'Whether the store and Temporal answer',
    tag: 'Operations',
    auth: 'public',
    answers: {
      200: { description: 'Both answer', body: healthSchema },
      503: { description: 'One does not', body: healthSchema },
    },
  },
  {
    operationId: 'getOpenApiDocument',
    method: 'get',
    path: '/openapi.json',
    summary: 'This document',
    tag: 'Operations',
    auth: 'public',
    answers: { 200: { description: 'OpenAPI 3.1', body: z.looseObject({ openapi: z.string() }) } },
  },
];

/** Express's `:name` form of a template. */
export const expressPath = (path: string) => path.replace(/\{(\w+)\}/g, ':$1');

const COMPILED = ROUTES.map((route) => ({
  route,
  pattern: new RegExp(`^${route.path.replace(/[.]/g, '\\.').replace(/\{\w+\}/g, '[^/]+')}$`),
}));

/** The route of the table a request is for (method and path), if any. */
export function findRoute(method: string, path: string): RouteSpec | undefined {
  const lower = method.toLowerCase();
  return COMPILED.find(({ route, pattern }) => route.method === lower && pattern.test(path))?.route;
}
