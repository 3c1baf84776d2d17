import { Router } from 'express';
import { z } from 'zod';
import { personName } from '../fields';
import { isReservedClaim, reservedClaimMessage } from '../../security/reserved-claims';
import type { Db } from '../../store/database';
import { listProvisionedApps } from '../../store/provisions';
import { findUser, findUserIdByEmail } from '../../store/users';
import { deletionWorkflowId, provisioningWorkflowId } from '../../workflows/ids';
import { deleteUserAndDeprovision, provisionExistingUser } from '../../workflows/provisioning';
import { sendProblem, userNotFound } from '../problem';
import { idempotentCreation } from '../idempotency';
import { answer, toAnswer, toHttpOutcome } from '../provisioning-outcome';
import { createUserThroughWorkflow, newUserFrom } from '../user-creation';
import type { WorkflowRunner } from '../../client/workflow-runner';

export const createProfileSchema = z
  .object({
    email: z.email().max(256),
    firstName: personName.optional(),
    lastName: personName.optional(),
    password: z.string().min(8, 'must be at least 8 characters').max(1024).optional(),
    organizationId: z.string().trim().min(1).max(256).optional(),
    customAttributes: z
      .record(z.string().min(1).max(128), z.string().max(4096))
      .superRefine((attributes, ctx) => {
        for (const name of Object.keys(attributes))
          if (isReservedClaim(name))
            ctx.addIssue({ code: 'custom', path: [name], message: reservedClaimMessage(name) });
      })
      .optional(),
  })
  .strict();

const userIdParam = z.string().min(1).max(256);
const emailQuery = z.email().max(256);

export function profileRouter({ db, run }: { db: Db; run: WorkflowRunner }): Router {
  const router = Router();

  router.post('/', async (req, res) => {
    const { password, ...profile } = createProfileSchema.parse(req.body);
    await idempotentCreation(db, 'POST /api/v1/profile', req, res, async (userId) => {
      const outcome = await createUserThroughWorkflow(
        { db, run },
        { trigger: 'admin-api', password, userId, user: newUserFrom(profile) },
      );
      return toAnswer(toHttpOutcome(outcome, 201));
    });
  });

  /** Finds a user by e-mail (case-insensitively): how a client whose answer was lost learns what happened. */
  router.get('/', async (req, res) => {
    const email = emailQuery.safeParse(req.query.email);
    if (!email.success)
      return sendProblem(res, {
        status: 400,
        title: 'Invalid request',
        detail: 'email: the query parameter ?email= is required and must be an e-mail address',
      });
    const userId = await findUserIdByEmail(db, email.data);
    const user = userId && (await findUser(db, userId));
    if (!user) return sendProblem(res, userNotFound(`e-mail ${email.data}`));
    res.json({ ...user, provisionedApps: await listProvisionedApps(db, user.userId) });
  });

  router.get('/:userId', async (req, res) => {
    const userId = userIdParam.parse(req.params.userId);
    const user = await findUser(db, userId);
    if (!user) return sendProblem(res, userNotFound(`id ${userId}`));
    res.json({ ...user, provisionedApps: await listProvisionedApps(db, userId) });
  });

  router.delete('/:userId', async (req, res) => {
    const userId = userIdParam.parse(req.params.userId);
    const result = await run(deleteUserAndDeprovision, {
      workflowId: deletionWorkflowId(userId),
      args: [{ userId }],
      search: { userId, trigger: 'admin-api' },
    });
    if (!result.deleted) return sendProblem(res, userNotFound(`id ${userId}`));
    res.status(204).end();
  });

  router.post('/:userId/provisioning', async (req, res) => {
    const userId = userIdParam.parse(req.params.userId);
    const outcome = await run(provisionExistingUser, {
      workflowId: provisioningWorkflowId(userId),
      args: [{ trigger: 'retry', userId }],
      search: { userId, trigger: 'retry' },
    });
    answer(res, toHttpOutcome(outcome, 200));
  });

  return router;
}
