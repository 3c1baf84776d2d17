import type { RequestHandler, Response } from 'express';
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
import { findRecoveryUser, findRecoveryUserById } from '../../platform/store/accounts';
import { equalDuration } from '../../platform/security/equal-duration';
import { AttemptInProgressError } from '../../platform/temporal/run-errors';
import type { CreationOutcome } from '../../provisioning/workflows/provisioning';
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

  // A taken address answers only after as long as a creation takes, so the duration does not tell it apart either.
  const atFloor = equalDuration({ halfLifeMs: 60_000, ceilingMs: 5_000 });

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
    const create = () =>
      createUserThroughWorkflow({ db, run }, { trigger: 'register', password, user: newUserFrom(profile) });
    if (config.Auth.RequireConfirmedEmail && mails) return registerUnconfirmed(res, profile.email, create);
    answer(res, toHttpOutcome(await create(), 201, { revealIds: false }));
  };

  /**
   * Auth:RequireConfirmedEmail: a new address and a taken one get the same answer (202, the same body) in the same
   * time, as "forgot your password?" does; the new account's address gets the confirmation link (it signs in once
   * that is opened), a taken address's owner a mail saying someone tried. An app's refusal is still 422 (spec).
   */
  async function registerUnconfirmed(res: Response, email: string, create: () => Promise<CreationOutcome>) {
    const outcome = await atFloor(async () => {
      try {
        const created = await create();
        if (created.status === 'provisioned') await mailConfirmation(created.user.userId);
        if (created.status === 'duplicate') await mailOwner(email);
        return created;
      } catch (error) {
        // Another registration of the address is running: the same answer again.
        if (error instanceof AttemptInProgressError) return undefined;
        throw error;
      }
    });
    if (outcome && outcome.status !== 'provisioned' && outcome.status !== 'duplicate')
      return answer(res, toHttpOutcome(outcome, 201, { revealIds: false }));
    res.status(202).json({
      email,
      detail: `check the mailbox of ${email}: the link in the mail we sent confirms the address and completes the registration`,
    });
  }

  async function mailConfirmation(userId: string) {
    const user = await findRecoveryUserById(db, userId);
    if (user) await mails!.confirmation(user);
  }

  async function mailOwner(email: string) {
    const owner = await findRecoveryUser(db, email);
    if (owner) await mails!.registrationAttempt(owner);
  }

  return { register: [limit, register] };
}
