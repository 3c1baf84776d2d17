import type { RequestHandler } from 'express';
import type { Operations } from '../../platform/http/operations';
import { storedClientLimit } from '../../platform/http/rate-limit';
import { z } from 'zod';
import { emailAddress, passwordText, personName } from '../../platform/http/fields';
import type { AppConfig } from '../../platform/config/schema';
import { passwordPolicyViolations } from '../../platform/security/password-policy';
import type { Db } from '../../platform/store/database';
import { isSsoDomainEmail } from '../../platform/store/federation';
import { domainOf } from '../../platform/store/users';
import { passwordPolicyProblem, sendProblem } from '../../platform/http/problem';
import { answer, toHttpOutcome } from '../../provisioning/outcome-answers';
import { createUserThroughWorkflow, newUserFrom } from '../../provisioning/creation';
import type { WorkflowRunner } from '../../provisioning/workflow-runner';
import { findRecoveryUserById } from '../../platform/store/accounts';
import type { RecoveryMails } from '../recovery/router';
import type { SourceReadThrough } from '../read-through';

export const registrationSchema = z
  .object({
    email: emailAddress,
    password: passwordText,
    firstName: personName.optional(),
    lastName: personName.optional(),
  })
  .strict();

/** Self-service registration: public, rate limited per client IP, provisions into every configured app. */
export function registerOperations({
  config,
  db,
  run,
  mails,
  readThrough,
}: {
  config: AppConfig;
  db: Db;
  run: WorkflowRunner;
  /** The confirmation mail; absent without sign-in (there is no page its link could open). */
  mails?: RecoveryMails;
  /** The cutover's read-through window, while it is configured. */
  readThrough?: SourceReadThrough;
}): Operations {
  const { PermitLimit, WindowSeconds } = config.Auth.RegistrationRateLimit;
  // Counted in the store, as the sign-in budget is: every API process spends the same one.
  const limit = storedClientLimit(db, 'registration:address', WindowSeconds, PermitLimit, (res) =>
    sendProblem(res, {
      status: 429,
      title: 'Too many registrations',
      detail: `at most ${PermitLimit} registrations per ${WindowSeconds} s from one client; retry later`,
    }),
  );

  const register: RequestHandler = async (req, res) => {
    const { password, ...profile } = registrationSchema.parse(req.body);
    // An address of an SSO domain belongs to that organization: its account is made by the first sign-in through the
    // organization's identity provider, never by a stranger registering it first with a password.
    if (await isSsoDomainEmail(db, profile.email)) {
      const domain = domainOf(profile.email);
      return sendProblem(res, {
        status: 400,
        title: 'Registration not allowed for this domain',
        detail: `email: addresses of ${domain} sign in through their organization's identity provider; sign in there instead of registering`,
        errors: [
          { field: 'email', message: `addresses of ${domain} sign in through their organization's identity provider` },
        ],
      });
    }
    const violations = passwordPolicyViolations(password, config.Auth.PasswordPolicy);
    if (violations.length > 0) return sendProblem(res, passwordPolicyProblem(violations));
    // During the read-through window an address the source already holds is that user's: it is migrated now, and
    // the registration meets it as it would after a sweep (409), instead of making a second account.
    await readThrough?.user(profile.email);
    const outcome = await createUserThroughWorkflow(
      { db, run },
      { trigger: 'register', password, user: newUserFrom(profile) },
    );
    // Auth:RequireConfirmedEmail: the new account signs in once the link in this mail has confirmed the address.
    if (outcome.status === 'provisioned' && config.Auth.RequireConfirmedEmail && mails) {
      const user = await findRecoveryUserById(db, outcome.user.userId);
      if (user) await mails.confirmation(user);
    }
    answer(res, toHttpOutcome(outcome, 201, { revealIds: false }));
  };
  return { register: [limit, register] };
}
