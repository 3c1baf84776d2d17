import { randomUUID } from 'node:crypto';
import { Router, type Response } from 'express';
import { z } from 'zod';
import { hashPassword } from '../../passwords/native';
import type { Db } from '../../store/database';
import { discardPasswordHash, stashPasswordHash } from '../../store/pending-credentials';
import { listProvisionedApps } from '../../store/provisions';
import { findUser } from '../../store/users';
import { creationWorkflowId, deletionWorkflowId, retryWorkflowId } from '../../workflows/ids';
import { createUserAndProvision, deleteUserAndDeprovision, provisionExistingUser } from '../../workflows/provisioning';
import { sendProblem, validationProblem } from '../problem';
import { toHttpOutcome, type HttpOutcome } from '../provisioning-outcome';
import { ResultDeadlineError, type WorkflowRunner } from '../workflow-runner';

const name = z.string().trim().min(1).max(256);

export const createProfileSchema = z
  .object({
    email: z.email().max(256),
    firstName: name.optional(),
    lastName: name.optional(),
    password: z.string().min(8, 'must be at least 8 characters').max(1024).optional(),
    organizationId: z.string().trim().min(1).max(256).optional(),
    customAttributes: z.record(z.string().min(1).max(128), z.string().max(4096)).optional(),
  })
  .strict();

const userIdParam = z.string().min(1).max(256);

function answer(res: Response, outcome: HttpOutcome): void {
  if ('problem' in outcome) sendProblem(res, outcome.problem);
  else res.status(outcome.status).json(outcome.user);
}

export function profileRouter({ db, run }: { db: Db; run: WorkflowRunner }): Router {
  const router = Router();

  router.post('/', async (req, res) => {
    const parsed = createProfileSchema.safeParse(req.body);
    if (!parsed.success) return sendProblem(res, validationProblem(parsed.error));
    const { password, ...profile } = parsed.data;
    // Hashed here, handed over through the store: the password and its hash never enter workflow history.
    const credentialRef = password === undefined ? undefined : await stashPasswordHash(db, await hashPassword(password));
    try {
      const outcome = await run(createUserAndProvision, {
        workflowId: creationWorkflowId('admin-api', profile.email),
        onRunning: 'fail',
        args: [
          {
            trigger: 'admin-api',
            credentialRef,
            user: {
              userId: randomUUID(),
              email: profile.email,
              firstName: profile.firstName ?? null,
              lastName: profile.lastName ?? null,
              organizationId: profile.organizationId ?? null,
              customAttributes: profile.customAttributes ?? {},
            },
          },
        ],
      });
      answer(res, toHttpOutcome(outcome, 201));
    } catch (error) {
      // Past the deadline the workflow may still need the credential; otherwise nothing will consume it.
      if (credentialRef && !(error instanceof ResultDeadlineError)) await discardPasswordHash(db, credentialRef);
      throw error;
    }
  });

  router.get('/:userId', async (req, res) => {
    const userId = userIdParam.parse(req.params.userId);
    const user = await findUser(db, userId);
    if (!user) return sendProblem(res, { status: 404, title: 'User not found', detail: `no user with id ${userId}` });
    res.json({ ...user, provisionedApps: await listProvisionedApps(db, userId) });
  });

  router.delete('/:userId', async (req, res) => {
    const userId = userIdParam.parse(req.params.userId);
    const result = await run(deleteUserAndDeprovision, { workflowId: deletionWorkflowId(userId), onRunning: 'attach', args: [{ userId }] });
    if (!result.deleted) return sendProblem(res, { status: 404, title: 'User not found', detail: `no user with id ${userId}` });
    res.status(204).end();
  });

  router.post('/:userId/provisioning', async (req, res) => {
    const userId = userIdParam.parse(req.params.userId);
    const outcome = await run(provisionExistingUser, { workflowId: retryWorkflowId(userId), onRunning: 'attach', args: [{ trigger: 'retry', userId }] });
    answer(res, toHttpOutcome(outcome, 200));
  });

  return router;
}
