import type { RequestHandler, Response } from 'express';
import type { Operations } from '../../platform/http/operations';
import { storedClientLimit } from '../rate-limit';
import { z } from 'zod';
import { emailAddress, passwordText, personName } from '../../platform/http/fields';
import type { AppConfig } from '../../platform/config/config-schema';
import { passwordPolicyViolations } from '../../platform/security/password-policy';
import type { Db } from '../../platform/store/database';
import { isSsoDomainEmail } from '../store/sso-provider-configs';
import { domainOf } from '../../platform/store/users';
import { passwordPolicyProblem, sendProblem } from '../../platform/http/problem';
import { answer, toHttpOutcome } from '../../provisioning/outcome-answers';
import { createUserThroughWorkflow, newUserFrom } from '../../provisioning/creation';
import type { WorkflowRunner } from '../../provisioning/workflow-runner';
import { findRecoveryUser, findRecoveryUserById } from '../store/accounts';
import { equalDuration } from '../../platform/security/equal-duration';
import { AttemptInProgressError } from '../../platform/temporal/run-errors';
import type { CreationOutcome } from '../../provisioning/workflows/provisioning';
import type { RecoveryMails } from '../recovery/recovery-router';
import type { SourceReadThrough } from '../source-read-through';

export const registrationSchema = z
  .object({
    email: emailAddress,
    password: passwordText,
    firstName: personName.optional(),
    lastName: personName.optional(),
  })
  .strict();

/** 503 with Retry-After: the read-through window could not tell whether the source holds the address. */
function sourceUnavailable(res: Response, { retryAfterSeconds, unavailableMessage }: SourceReadThrough) {
  res.setHeader('Retry-After', String(retryAfterSeconds));
  return sendProblem(res, {
    status: 503,
    title: 'Registration unavailable',
    detail: `email: whether this address has an account in the previous system cannot be checked now; retry after ${retryAfterSeconds} s${unavailableMessage ? `. ${unavailableMessage}` : ''}`,
  });
}

/**
 * Auth:RequireConfirmedEmail: a creation, then the new account's confirmation link, or for a taken address a mail to
 * its owner saying someone tried. Undefined when another registration of the address is running.
 */
async function createAndMail(
  db: Db,
  mails: RecoveryMails,
  email: string,
  create: () => Promise<CreationOutcome>,
): Promise<CreationOutcome | undefined> {
  try {
    const created = await create();
    const mailTo =
      created.status === 'provisioned'
        ? await findRecoveryUserById(db, created.user.userId)
        : created.status === 'duplicate'
          ? await findRecoveryUser(db, email)
          : undefined;
    if (mailTo && created.status === 'provisioned') await mails.confirmation(mailTo);
    if (mailTo && created.status === 'duplicate') await mails.registrationAttempt(mailTo);
    return created;
  } catch (error) {
    if (error instanceof AttemptInProgressError) return undefined;
    throw error;
  }
}

/**
 * Auth:RequireConfirmedEmail: a new address and a taken one get the same answer (202, the same body) in the same
 * time, as "forgot your password?" does; the mail tells the address's owner which it was. An app's refusal of a new
 * address is still 422 (spec).
 */
async function registerUnconfirmed(res: Response, email: string, attempt: () => Promise<CreationOutcome | undefined>) {
  const outcome = await attempt();
  if (outcome && outcome.status !== 'provisioned' && outcome.status !== 'duplicate')
    return answer(res, toHttpOutcome(outcome, 201, { revealIds: false }));
  res.status(202).json({
    email,
    detail: `check the mailbox of ${email}: the link in the mail we sent confirms the address and completes the registration`,
  });
}

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
    // the registration meets it as it would after a sweep (409), instead of making a second account. When the source
    // cannot say (unreadable, too slow, or holding the address twice), no account is made either.
    if ((await readThrough?.user(profile.email)) === 'unavailable') return sourceUnavailable(res, readThrough!);
    const create = () =>
      createUserThroughWorkflow({ db, run }, { trigger: 'register', password, user: newUserFrom(profile) });
    if (config.Auth.RequireConfirmedEmail && mails)
      return registerUnconfirmed(res, profile.email, () =>
        atFloor(() => createAndMail(db, mails, profile.email, create)),
      );
    answer(res, toHttpOutcome(await create(), 201, { revealIds: false }));
  };

  return { register: [limit, register] };
}
