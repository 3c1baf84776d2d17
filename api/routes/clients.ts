import { Router } from 'express';
import { z } from 'zod';
import type { AppProvider } from '../../activities/provisioning/apps';
import { appIdSchema, clientConfigSchema } from '../../config/schema';
import { clientRow, clientView, publicClientGrantProblem, unofferedGrantTypes } from '../../oidc/clients';
import { hashClientSecret } from '../../security/client-secrets';
import { deleteClient, findClient, listClients, putClient } from '../../store/clients';
import type { Db } from '../../store/database';
import { sendProblem, type Problem } from '../problem';
import { redirectUri, storableDate } from '../fields';

/** IdentityServer's field names (`RedirectUris`), with camelCase (`redirectUris`) accepted too. */
const pascalKeys = (body: unknown) =>
  body && typeof body === 'object' && !Array.isArray(body)
    ? Object.fromEntries(Object.entries(body).map(([k, v]) => [k.charAt(0).toUpperCase() + k.slice(1), v]))
    : body;

/** A client as PUT takes it: secrets in plaintext (stored hashed, never shown), the apps first authorization provisions. */
export const clientBodySchema = z.preprocess(
  pascalKeys,
  clientConfigSchema
    .extend({
      ClientId: clientConfigSchema.shape.ClientId.optional(),
      /** Omitted: the stored secrets stay. */
      ClientSecrets: z
        .array(
          z
            .object({
              Value: z.string().min(16).max(512),
              Description: z.string().max(200).optional(),
              Expiration: storableDate.optional(),
            })
            .strict(),
        )
        .max(10)
        .optional(),
      RedirectUris: z.array(redirectUri).max(100).default([]),
      PostLogoutRedirectUris: z.array(redirectUri).max(100).default([]),
      ProvisioningApps: z.array(appIdSchema).max(100).default([]),
    })
    .strict(),
);

const notFound = (clientId: string): Problem => ({
  status: 404,
  title: 'Client not found',
  detail: `no client ${clientId}`,
});

/** `/api/v1/clients`: the OpenID Connect clients, as IdentityServer's configuration describes them. */
export function clientsRouter({ db, apps }: { db: Db; apps: AppProvider }): Router {
  const router = Router();

  router.get('/', async (_req, res) => {
    res.json((await listClients(db)).map(clientView));
  });

  router.get('/:clientId', async (req, res) => {
    const row = await findClient(db, req.params.clientId);
    if (!row) return sendProblem(res, notFound(req.params.clientId));
    res.json(clientView(row));
  });

  /** Replaces the whole client; the provider reads it at the next request. */
  router.put('/:clientId', async (req, res) => {
    const clientId = clientConfigSchema.shape.ClientId.parse(req.params.clientId);
    const body = clientBodySchema.parse(req.body);
    const invalid = (detail: string) => sendProblem(res, { status: 400, title: 'Invalid request', detail });
    if (body.ClientId !== undefined && body.ClientId !== clientId)
      return invalid(`ClientId: the body says ${body.ClientId}, the path ${clientId}`);
    if (body.RedirectUris.length > 0 && !body.AllowedGrantTypes.includes('authorization_code'))
      return invalid(
        'RedirectUris: redirect URIs are used only by the authorization_code grant; add it to AllowedGrantTypes, or leave RedirectUris out',
      );
    const publicProblem = publicClientGrantProblem(body);
    if (publicProblem) return invalid(`AllowedGrantTypes: ${publicProblem}`);
    const unoffered = unofferedGrantTypes(body.AllowedGrantTypes);
    if (unoffered.length > 0) return invalid(`AllowedGrantTypes: this service does not offer ${unoffered.join(', ')}`);
    const known = await Promise.all(body.ProvisioningApps.map((appId) => apps.getApp(appId)));
    const unknown = body.ProvisioningApps.filter((_, i) => !known[i]);
    if (unknown.length > 0) return invalid(`ProvisioningApps: no provisioning app ${unknown.join(', ')}`);
    const row = clientRow({ ...body, ClientId: clientId, ClientSecrets: [] }, 'api', body.ProvisioningApps);
    const secrets = body.ClientSecrets?.map((s) => ({
      value: hashClientSecret(s.Value),
      description: s.Description ?? null,
      expiration: s.Expiration ?? null,
    }));
    const existed = await putClient(db, row, secrets);
    res.status(existed ? 200 : 201).json(clientView((await findClient(db, clientId))!));
  });

  router.delete('/:clientId', async (req, res) => {
    if (!(await deleteClient(db, req.params.clientId))) return sendProblem(res, notFound(req.params.clientId));
    res.status(204).end();
  });

  return router;
}
