import { Router } from 'express';
import { rateLimit } from 'express-rate-limit';
import { z } from 'zod';
import { personName } from '../fields';
import type { AppConfig } from '../../config/schema';
import { passwordPolicyViolations } from '../../security/password-policy';
import type { Db } from '../../store/database';
import { sendProblem } from '../problem';
import { answer, toHttpOutcome } from '../provisioning-outcome';
import { createUserThroughWorkflow, newUserFrom } from '../user-creation';
import type { WorkflowRunner } from '../../client/workflow-runner';

export const registrationSchema = z
  .object({
    email: z.email().max(256),
    password: z.string().max(1024),
    firstName: personName.optional(),
    lastName: personName.optional(),
  })
  .strict();

/** Self-service registration: public, rate limited per client IP, provisions into every configured app. */
export function registerRouter({ config, db, run }: { config: AppConfig; db: Db; run: WorkflowRunner }): Router {
  const router = Router();
  const { PermitLimit, WindowSeconds } = config.Auth.RegistrationRateLimit;
  router.use(
    rateLimit({
      windowMs: WindowSeconds * 1000,
      limit: PermitLimit,
      standardHeaders: 'draft-8',
      legacyHeaders: false,
      handler: (_req, res, _next, options) => {
        res.set('Retry-After', String(Math.ceil(options.windowMs / 1000)));
        sendProblem(res, {
          status: 429,
          title: 'Too many registrations',
          detail: `at most ${PermitLimit} registrations per ${WindowSeconds} s from one client; retry later`,
        });
      },
    }),
  );

  router.post('/', async (req, res) => {
    const { password, ...profile } = registrationSchema.parse(req.body);
    const violations = passwordPolicyViolations(password, config.Auth.PasswordPolicy);
    if (violations.length > 0) {
      return sendProblem(res, {
        status: 400,
        title: 'Password does not meet the policy',
        detail: violations.map((v) => `password: ${v}`).join('; '),
        errors: violations.map((message) => ({ field: 'password', message })),
      });
    }
    const outcome = await createUserThroughWorkflow(
      { db, run },
      { trigger: 'register', password, user: newUserFrom(profile) },
    );
    answer(res, toHttpOutcome(outcome, 201, { revealIds: false }));
  });
  return router;
}
