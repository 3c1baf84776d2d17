import { parsedPathParam, type Operations } from '../../platform/http/operations';
import { z } from 'zod';
import { emailAddress, passwordText, personName } from '../../platform/http/fields';
import { FIELD_BOUNDS } from '../../platform/security/field-bounds';
import { isReservedClaim, reservedClaimMessage } from '../../platform/security/reserved-claims';
import type { Db } from '../../platform/store/database';
import { listProvisionedApps } from '../../platform/store/provisions';
import { findUser } from '../../platform/store/users';
import { deletionWorkflowId, provisioningWorkflowId } from '../workflows/ids';
import { deleteUserAndDeprovision, provisionExistingUser } from '../workflows/provisioning';
import { passwordPolicyProblem, sendProblem, userNotFound } from '../../platform/http/problem';
import type { PasswordPolicy } from '../../platform/config/config-schema';
import { passwordPolicyViolations } from '../../platform/security/password-policy';
import { idempotentCreation } from '../../platform/http/idempotency';
import { answer, toAnswer, toHttpOutcome } from '../outcome-answers';
import { createUserThroughWorkflow, newUserFrom } from '../creation';
import type { WorkflowRunner } from '../workflow-runner';

/** Custom attributes as a body carries them (a change may set one to null to remove it): bounded names and values, none a claim the service sets itself. */
export const customAttributes = <T extends z.ZodType>(value: T) =>
  z.record(z.string().min(1).max(FIELD_BOUNDS.attributeName), value).superRefine((attributes, ctx) => {
    for (const name of Object.keys(attributes))
      if (isReservedClaim(name)) ctx.addIssue({ code: 'custom', path: [name], message: reservedClaimMessage(name) });
  });
export const attributeValue = z.string().max(FIELD_BOUNDS.attributeValue);

export const createProfileSchema = z
  .object({
    email: emailAddress,
    firstName: personName.optional(),
    lastName: personName.optional(),
    password: passwordText.optional(),
    organizationId: z.string().trim().min(1).max(FIELD_BOUNDS.id).optional(),
    /** The address is known to be the user's: no confirmation mail, and sign-in under Auth:RequireConfirmedEmail. */
    emailConfirmed: z.boolean().optional(),
    customAttributes: customAttributes(attributeValue).optional(),
  })
  .strict();

export const userIdParam = z.string().min(1).max(FIELD_BOUNDS.id);

export function profileOperations({
  db,
  run,
  passwordPolicy,
  issuer,
}: {
  db: Db;
  run: WorkflowRunner;
  passwordPolicy: PasswordPolicy;
  /** Api:PublicUrl, the issuer of the sessions a deletion ends (back-channel logout tokens name it). */
  issuer: string;
}): Operations {
  return {
    createUser: async (req, res) => {
      const { password, ...profile } = createProfileSchema.parse(req.body);
      // The same rules as registration and SCIM: Auth:PasswordPolicy, not a length of the admin API's own.
      const violations = password === undefined ? [] : passwordPolicyViolations(password, passwordPolicy);
      if (violations.length > 0) return sendProblem(res, passwordPolicyProblem(violations));
      await idempotentCreation(db, 'POST /api/v1/profile', req, res, async (userId) => {
        const outcome = await createUserThroughWorkflow(
          { db, run },
          { trigger: 'admin-api', password, userId, user: newUserFrom(profile) },
        );
        return toAnswer(toHttpOutcome(outcome, 201));
      });
    },

    getUser: async (req, res) => {
      const userId = parsedPathParam(req, 'userId', userIdParam);
      const user = await findUser(db, userId);
      if (!user) return sendProblem(res, userNotFound(`id ${userId}`));
      res.json({ ...user, provisionedApps: await listProvisionedApps(db, userId) });
    },

    deleteUser: async (req, res) => {
      const userId = parsedPathParam(req, 'userId', userIdParam);
      const result = await run(deleteUserAndDeprovision, {
        workflowId: deletionWorkflowId(userId),
        args: [{ userId, issuer }],
        search: { userId, trigger: 'admin-api' },
      });
      if (!result.deleted) return sendProblem(res, userNotFound(`id ${userId}`));
      res.status(204).end();
    },

    retryProvisioning: async (req, res) => {
      const userId = parsedPathParam(req, 'userId', userIdParam);
      const outcome = await run(provisionExistingUser, {
        workflowId: provisioningWorkflowId(userId),
        args: [{ trigger: 'retry', userId }],
        search: { userId, trigger: 'retry' },
      });
      answer(res, toHttpOutcome(outcome, 200));
    },
  };
}
