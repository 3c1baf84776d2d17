import { parsedPathParam, pathParam, type Operations } from '../../platform/http/operations';
import { z } from 'zod';
import type { AppProvider } from '../../provisioning/apps/app-providers';
import { appIdSchema, clientConfigSchema } from '../../platform/config/config-schema';
import { clientRow, clientView } from '../oidc/provider-clients';
import {
  KEPT_ONLY_GRANT_TYPES,
  publicClientGrantProblem,
  unofferedGrantTypes,
} from '../../platform/config/client-rules';
import { hashClientSecret } from '../../platform/security/client-secrets';
import { deleteClient, findClient, listClients, putClient, type ClientRow } from '../../platform/store/clients';
import type { Db } from '../../platform/store/database';
import { sendProblem, type Problem } from '../../platform/http/problem';
import { redirectUri, storableDate } from '../../platform/http/fields';
import { callbackUrlProblem, type AllowList } from '../../platform/security/callback-address';
import { FIELD_BOUNDS } from '../../platform/security/field-bounds';

/** IdentityServer's field names (`RedirectUris`), with camelCase (`redirectUris`) accepted too. */
const pascalCase = (key: string) => key.charAt(0).toUpperCase() + key.slice(1);
const pascalKeys = (body: unknown) =>
  body && typeof body === 'object' && !Array.isArray(body)
    ? Object.fromEntries(Object.entries(body).map(([k, v]) => [pascalCase(k), v]))
    : body;

/**
 * IdentityServer's other client settings (Duende's Client entity): the migration keeps them as the source had them,
 * GET shows them, and PUT takes them back, so a client can be read, changed and written again. The service does not
 * act on them (see docs/sign-in.md); they are kept for the cutover report and for a way back.
 */
const IDENTITY_SERVER_SETTINGS = [
  'ProtocolType',
  'Description',
  'ClientUri',
  'LogoUri',
  'FrontChannelLogoutUri',
  'FrontChannelLogoutSessionRequired',
  'AllowAccessTokensViaBrowser',
  'AllowPlainTextPkce',
  'RequireRequestObject',
  'AlwaysIncludeUserClaimsInIdToken',
  'AllowRememberConsent',
  'ConsentLifetime',
  'EnableLocalLogin',
  'IncludeJwtId',
  'AlwaysSendClientClaims',
  'ClientClaimsPrefix',
  'PairWiseSubjectSalt',
  'UserSsoLifetime',
  'UserCodeType',
  'DeviceCodeLifetime',
  'UpdateAccessTokenClaimsOnRefresh',
  'RequireDPoP',
  'DPoPValidationMode',
  'DPoPClockSkew',
  'CibaLifetime',
  'PollingInterval',
  'CoordinateLifetimeWithUserSession',
  'InitiateLoginUri',
  'RequirePushedAuthorization',
  'PushedAuthorizationLifetime',
  'AllowedIdentityTokenSigningAlgorithms',
] as const;

/** What GET shows but only the service or the source sets: taken back by PUT and ignored, the stored value kept. */
const READ_ONLY_FIELDS = [
  'Id',
  'Created',
  'Updated',
  'LastAccessed',
  'NonEditable',
  'Origin',
  'UnsupportedSettings',
] as const;

/** A setting as the source held it: a value, or a small structure (a SQL interval as the reader returns it). */
const settingValue = z.union([z.string().max(2000), z.number(), z.boolean(), z.null(), z.record(z.string(), z.json())]);

/** A client as PUT takes it: secrets in plaintext (stored hashed, never shown), the apps first authorization provisions. */
export const clientBodySchema = z.preprocess(
  pascalKeys,
  clientConfigSchema
    .extend({
      ...Object.fromEntries(IDENTITY_SERVER_SETTINGS.map((name) => [name, settingValue.optional()])),
      ...Object.fromEntries(READ_ONLY_FIELDS.map((name) => [name, z.unknown().optional()])),
      ClientId: clientConfigSchema.shape.ClientId.optional(),
      // GET shows a client without a name as null; PUT takes that back.
      ClientName: clientConfigSchema.shape.ClientName.nullable().transform((name) => name ?? undefined),
      /** Omitted: the stored secrets stay. IdentityServer's own shape (`Type`, null fields) is taken as it is. */
      ClientSecrets: z
        .array(
          z
            .object({
              Value: z.string().min(16).max(512),
              Type: z
                .literal('SharedSecret', {
                  error: "only SharedSecret is served (IdentityServer's certificate and JWK secrets are not)",
                })
                .optional(),
              Description: z.string().max(200).nullable().optional(),
              Expiration: storableDate.nullable().optional(),
            })
            .strict(),
        )
        .max(10)
        .optional(),
      /** IdentityServer's ClientClaims, as GET shows them. Omitted: the stored claims stay. */
      ClientClaims: z
        .array(
          z
            .object({
              Type: z.string().min(1).max(FIELD_BOUNDS.attributeName),
              Value: z.string().max(FIELD_BOUNDS.attributeValue),
            })
            .strict(),
        )
        .max(100)
        .optional(),
      RedirectUris: z.array(redirectUri).max(100).default([]),
      PostLogoutRedirectUris: z.array(redirectUri).max(100).default([]),
      ProvisioningApps: z.array(appIdSchema).max(100).default([]),
    })
    .strict(),
);

/** A body without the read-only fields GET showed (they are never written from a body). */
const withoutReadOnly = <T extends object>(body: T): T =>
  Object.fromEntries(
    Object.entries(body).filter(([key]) => !(READ_ONLY_FIELDS as readonly string[]).includes(key)),
  ) as T;

/** The read-only fields a stored client keeps in its settings (a migrated client's Created), kept by a PUT. */
function readOnlyOf(stored: ClientRow | undefined): Record<string, unknown> {
  const settings = stored?.settings ?? {};
  return Object.fromEntries(READ_ONLY_FIELDS.filter((f) => f in settings).map((f) => [f, settings[f]]));
}

/**
 * The body's keys are matched in IdentityServer's spelling (`RedirectUris`), but a message names a field as the caller
 * wrote it: an unknown `client_name` is reported as `client_name`, not as the `Client_name` it was matched as.
 */
function inCallersSpelling(error: z.ZodError, body: unknown): z.ZodError {
  const spelled = new Map<string, string>();
  if (body && typeof body === 'object' && !Array.isArray(body))
    for (const key of Object.keys(body)) spelled.set(pascalCase(key), key);
  const original = (key: PropertyKey) => (typeof key === 'string' ? (spelled.get(key) ?? key) : key);
  return new z.ZodError(
    error.issues.map((issue) => ({
      ...issue,
      path: issue.path.length > 0 ? [original(issue.path[0]), ...issue.path.slice(1)] : issue.path,
      ...(issue.code === 'unrecognized_keys'
        ? {
            keys: issue.keys.map((k) => String(original(k))),
            message: `unrecognized key${issue.keys.length > 1 ? 's' : ''}: ${issue.keys.map((k) => `"${String(original(k))}"`).join(', ')}`,
          }
        : {}),
    })),
  );
}

const notFound = (clientId: string): Problem => ({
  status: 404,
  title: 'Client not found',
  detail: `no client ${clientId}`,
});

/** `/api/v1/clients`: the OpenID Connect clients, as IdentityServer's configuration describes them. */
export function clientsOperations({ db, apps, allow }: { db: Db; apps: AppProvider; allow: AllowList }): Operations {
  return {
    listClients: async (_req, res) => {
      res.json((await listClients(db)).map(clientView));
    },
    getClient: async (req, res) => {
      const row = await findClient(db, pathParam(req, 'clientId'));
      if (!row) return sendProblem(res, notFound(pathParam(req, 'clientId')));
      res.json(clientView(row));
    },
    /** Replaces the whole client; the provider reads it at the next request. */
    replaceClient: async (req, res) => {
      const clientId = parsedPathParam(req, 'clientId', clientConfigSchema.shape.ClientId);
      const invalid = (detail: string) => sendProblem(res, { status: 400, title: 'Invalid request', detail });
      const parsed = clientBodySchema.safeParse(req.body);
      if (!parsed.success) throw inCallersSpelling(parsed.error, req.body);
      const body = withoutReadOnly(parsed.data);
      if (body.ClientId !== undefined && body.ClientId !== clientId)
        return invalid(`ClientId: the body says ${body.ClientId}, the path ${clientId}`);
      const publicProblem = publicClientGrantProblem(body);
      if (publicProblem) return invalid(`AllowedGrantTypes: ${publicProblem}`);
      const unoffered = unofferedGrantTypes(body.AllowedGrantTypes);
      if (unoffered.length > 0)
        return invalid(`AllowedGrantTypes: this service does not offer ${unoffered.join(', ')}`);
      const stored = await findClient(db, clientId);
      const added = KEPT_ONLY_GRANT_TYPES.filter(
        (g) => body.AllowedGrantTypes.includes(g) && !stored?.grant_types.includes(g),
      );
      if (added.length > 0)
        return invalid(
          `AllowedGrantTypes: ${added.join(', ')} is kept for clients migrated with it and never given to another client`,
        );
      if (body.RedirectUris.length > 0 && !body.AllowedGrantTypes.includes('authorization_code'))
        return invalid(
          'RedirectUris: redirect URIs are used only by the authorization_code grant; add it to AllowedGrantTypes, or leave RedirectUris out',
        );
      // Logout tokens are posted from the worker under the rule app callbacks follow: an internal address is refused
      // unless Auth:AllowedInternalTargets lists it.
      const logoutUriProblem = body.BackChannelLogoutUri && callbackUrlProblem(body.BackChannelLogoutUri, allow);
      if (logoutUriProblem) return invalid(`BackChannelLogoutUri ${logoutUriProblem}`);
      const known = await Promise.all(body.ProvisioningApps.map((appId) => apps.getApp(appId)));
      const unknown = body.ProvisioningApps.filter((_, i) => !known[i]);
      if (unknown.length > 0) return invalid(`ProvisioningApps: no provisioning app ${unknown.join(', ')}`);
      const { ClientClaims, ...settings } = body;
      const row = clientRow({ ...settings, ClientId: clientId, ClientSecrets: [] }, 'api', body.ProvisioningApps);
      row.settings = JSON.stringify({ ...JSON.parse(row.settings), ...readOnlyOf(stored) });
      // What GET showed comes back unchanged: the claims (unless the body sets them) and where the client came from.
      row.claims = JSON.stringify(ClientClaims?.map((c) => ({ type: c.Type, value: c.Value })) ?? stored?.claims ?? []);
      row.origin = stored?.origin ?? 'api';
      const secrets = body.ClientSecrets?.map((s) => ({
        value: hashClientSecret(s.Value),
        description: s.Description ?? null,
        expiration: s.Expiration ?? null,
      }));
      const existed = await putClient(db, row, secrets);
      res.status(existed ? 200 : 201).json(clientView((await findClient(db, clientId))!));
    },
    deleteClient: async (req, res) => {
      if (!(await deleteClient(db, pathParam(req, 'clientId'))))
        return sendProblem(res, notFound(pathParam(req, 'clientId')));
      res.status(204).end();
    },
  };
}
