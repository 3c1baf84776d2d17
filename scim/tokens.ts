import { pathParam, type Operations } from '../platform/http/operations';
import { z } from 'zod';
import type { Db } from '../platform/store/database';
import { createScimToken, listScimTokens, revokeScimToken } from './store/scim-tokens';
import { sendProblem } from '../platform/http/problem';

export const scimTokenCreateSchema = z.object({ description: z.string().trim().min(1).max(256).optional() }).strict();

/** Admin management of the bearer tokens identity providers use on /scim/v2. */
export function scimTokensOperations({ db }: { db: Db }): Operations {
  return {
    createScimToken: async (req, res) => {
      const { description } = scimTokenCreateSchema.parse(req.body ?? {});
      const created = await createScimToken(db, description ?? null);
      res.status(201).location(`${req.path}/${created.id}`).json(created);
    },
    listScimTokens: async (_req, res) => {
      res.json(await listScimTokens(db));
    },
    revokeScimToken: async (req, res) => {
      if (!(await revokeScimToken(db, pathParam(req, 'id'))))
        return sendProblem(res, {
          status: 404,
          title: 'Token not found',
          detail: `no SCIM token ${pathParam(req, 'id')}`,
        });
      res.status(204).end();
    },
  };
}
