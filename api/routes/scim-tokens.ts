import { Router } from 'express';
import { z } from 'zod';
import type { Db } from '../../store/database';
import { createScimToken, listScimTokens, revokeScimToken } from '../../store/scim-tokens';
import { sendProblem } from '../problem';

export const scimTokenCreateSchema = z.object({ description: z.string().trim().min(1).max(256).optional() }).strict();

/** Admin management of the bearer tokens identity providers use on /scim/v2. */
export function scimTokensRouter({ db }: { db: Db }): Router {
  const router = Router();
  router.post('/', async (req, res) => {
    const { description } = scimTokenCreateSchema.parse(req.body ?? {});
    const created = await createScimToken(db, description ?? null);
    res.status(201).location(`${req.baseUrl}/${created.id}`).json(created);
  });
  router.get('/', async (_req, res) => {
    res.json(await listScimTokens(db));
  });
  router.delete('/:id', async (req, res) => {
    if (!(await revokeScimToken(db, req.params.id)))
      return sendProblem(res, { status: 404, title: 'Token not found', detail: `no SCIM token ${req.params.id}` });
    res.status(204).end();
  });
  return router;
}
