import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { callbackUrlProblem, type AllowList } from '../../security/callback-address';
import type { KeyRing } from '../../security/data-protection';
import { isForbiddenKey } from '../../security/object-keys';
import type { Db } from '../../store/database';
import {
  deleteOidcProvider,
  domainsByProvider,
  findOidcProvider,
  listOidcProviders,
  putOidcProvider,
  type OidcProviderRow,
} from '../../store/federation';
import { sendProblem, type Problem } from '../problem';

const providerId = z
  .string()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'provider ids use letters, digits, ".", "_" and "-" (at most 64)')
  .refine((id) => !isForbiddenKey(id), 'this provider id is a reserved name');
const domain = z
  .string()
  .max(253)
  .regex(/^(?=.*\.)[a-z0-9-]+(\.[a-z0-9-]+)+$/i, 'must be a domain name such as example.com')
  .transform((d) => d.toLowerCase());
const name = z.string().min(1).max(200);

/** An upstream OpenID provider as the admin API takes it; the client secret is write-only. */
const oidcProviderSchema = z
  .object({
    id: providerId.optional(),
    name,
    authority: z.string().max(2000).pipe(z.url()),
    clientId: z.string().min(1).max(200),
    /** Plaintext, sealed at rest; omitted keeps the stored one, null removes it (a public client). */
    clientSecret: z.string().min(1).max(1000).nullable().optional(),
    scopes: z.array(z.string().min(1).max(100)).max(20).default(['openid', 'email', 'profile']),
    domains: z.array(domain).max(100).default([]),
    enabled: z.boolean().default(true),
    /** The source's LoginProvider scheme names that mean this provider, besides its id. */
    loginProviderNames: z.array(name).max(20).default([]),
  })
  .strict();

const view = (row: OidcProviderRow, domains: string[]) => ({
  id: row.id,
  name: row.name,
  authority: row.authority,
  clientId: row.client_id,
  hasClientSecret: row.client_secret !== null,
  scopes: row.scopes,
  domains,
  enabled: row.enabled,
  loginProviderNames: row.login_provider_names,
});

const notFound = (id: string): Problem => ({
  status: 404,
  title: 'Provider not found',
  detail: `no OIDC provider ${id}`,
});

/** `/api/v1/sso/oidc-providers`: the upstream OpenID providers federated sign-in sends SSO domains to. */
export function oidcProvidersRouter({ db, ring, allow }: { db: Db; ring: KeyRing; allow: AllowList }): Router {
  const router = Router();

  async function answerWith(res: Response, id: string, status = 200) {
    const row = await findOidcProvider(db, id);
    if (!row) return sendProblem(res, notFound(id));
    res.status(status).json(view(row, (await domainsByProvider(db, 'oidc')).get(id) ?? []));
  }

  router.get('/', async (_req, res) => {
    const domains = await domainsByProvider(db, 'oidc');
    res.json((await listOidcProviders(db)).map((row) => view(row, domains.get(row.id) ?? [])));
  });

  router.get('/:id', (req, res) => answerWith(res, req.params.id));

  async function write(req: Request, res: Response, mode: 'create' | 'replace') {
    const body = oidcProviderSchema.parse(req.body);
    const id = mode === 'replace' ? providerId.parse(req.params.id) : body.id;
    const invalid = (detail: string) => sendProblem(res, { status: 400, title: 'Invalid request', detail });
    if (!id) return invalid('id: required');
    if (mode === 'replace' && body.id !== undefined && body.id !== id)
      return invalid(`id: the body says ${body.id}, the path ${id}`);
    // The service fetches the authority's discovery document and every endpoint it names: an internal address is
    // refused here and again at connect time.
    const refused = callbackUrlProblem(body.authority, allow);
    if (refused) return invalid(`authority: refused: ${refused}`);
    const outcome = await putOidcProvider(
      db,
      ring,
      {
        id,
        name: body.name,
        authority: body.authority,
        client_id: body.clientId,
        clientSecret: body.clientSecret,
        scopes: body.scopes,
        enabled: body.enabled,
        login_provider_names: body.loginProviderNames,
      },
      [...new Set(body.domains)],
      mode,
    );
    if (outcome.status === 'exists')
      return sendProblem(res, {
        status: 409,
        title: 'Provider exists',
        detail: `OIDC provider ${id} exists already; PUT replaces it`,
      });
    if (outcome.status === 'missing') return sendProblem(res, notFound(id));
    if (outcome.status === 'domain-taken')
      return sendProblem(res, {
        status: 409,
        title: 'Domain taken',
        detail: `domains: ${outcome.domain} belongs to ${outcome.holder}`,
      });
    if (mode === 'create') res.location(`${req.baseUrl}/${id}`);
    await answerWith(res, id, outcome.status === 'created' ? 201 : 200);
  }

  router.post('/', (req, res) => write(req, res, 'create'));
  router.put('/:id', (req, res) => write(req, res, 'replace'));

  router.delete('/:id', async (req, res) => {
    if (!(await deleteOidcProvider(db, req.params.id))) return sendProblem(res, notFound(req.params.id));
    res.status(204).end();
  });

  return router;
}
