import type { RequestHandler, Response } from 'express';
import type { AppConfig } from '../platform/config/config-schema';
import { equalDuration } from '../platform/security/equal-duration';
import { passwordPolicyViolations } from '../platform/security/password-policy';
import type { Db } from '../platform/store/database';
import { domainOf } from '../platform/store/users';
import { AttemptInProgressError } from '../platform/temporal/run-errors';
import { createUserThroughWorkflow, newUserFrom } from '../provisioning/creation';
import type { WorkflowRunner } from '../provisioning/workflow-runner';
import type { CreationOutcome } from '../provisioning/workflows/provisioning';
import { storedClientLimit } from './rate-limit';
import type { RecoveryMails } from './recovery/recovery-router';
import type { SourceReadThrough } from './source-read-through';
import { findRecoveryUser, findRecoveryUserById } from './store/accounts';
import { isSsoDomainEmail } from './store/sso-provider-configs';

/** What a person registers with: the API's body and the sign-up page's form alike. */
export interface Registrant {
  email: string;
  password: string;
  firstName?: string;
  lastName?: string;
}

/**
 * How a registration ended, for the API and the sign-up page to answer each in its own form:
 * - `sso-domain`: the address belongs to an organization that signs in through its identity provider;
 * - `weak-password`: the rules of Auth:PasswordPolicy it breaks;
 * - `source-unavailable`: during the read-through window the source could not say whether it holds the address;
 * - `mailed` (Auth:RequireConfirmedEmail): a new address got its confirmation link, a taken one's owner a notice, or
 *   another registration of the address is running; the three read the same, in the same time;
 * - `outcome`: the creation's outcome (provisioned, duplicate, refused, failed); with Auth:RequireConfirmedEmail only a
 *   refusal or failure.
 */
export type RegistrationResult =
  | { status: 'sso-domain'; domain: string }
  | { status: 'weak-password'; violations: string[] }
  | { status: 'source-unavailable'; retryAfterSeconds: number; message?: string }
  | { status: 'mailed' }
  | { status: 'outcome'; outcome: CreationOutcome };

export interface RegistrationDependencies {
  config: AppConfig;
  db: Db;
  run: WorkflowRunner;
  /** The confirmation mail; absent without sign-in (there is no page its link could open). */
  mails?: RecoveryMails;
  /** The cutover's read-through window, while it is configured. */
  readThrough?: SourceReadThrough;
}

/**
 * Self-service registration, one path for `POST /api/auth/register` and the sign-up page: the SSO-domain rule, the
 * password policy, the read-through window, then provisioning's creation (the downstream apps' Try/Confirm/Cancel),
 * and with Auth:RequireConfirmedEmail the mail. One instance serves both, so they share the per-address budget and the
 * duration a taken address is padded to.
 */
export function createRegistration({ config, db, run, mails, readThrough }: RegistrationDependencies) {
  const { PermitLimit, WindowSeconds } = config.Auth.RegistrationRateLimit;
  // A taken address answers only after as long as a creation takes, so the duration does not tell it apart either.
  const atFloor = equalDuration({ halfLifeMs: 60_000, ceilingMs: 5_000 });

  /**
   * Auth:RequireConfirmedEmail: a creation, then the new account's confirmation link, or for a taken address a mail to
   * its owner saying someone tried. Undefined when another registration of the address is running.
   */
  async function createAndMail(email: string, create: () => Promise<CreationOutcome>, sender: RecoveryMails) {
    try {
      const created = await create();
      const mailTo =
        created.status === 'provisioned'
          ? await findRecoveryUserById(db, created.user.userId)
          : created.status === 'duplicate'
            ? await findRecoveryUser(db, email)
            : undefined;
      if (mailTo && created.status === 'provisioned') await sender.confirmation(mailTo);
      if (mailTo && created.status === 'duplicate') await sender.registrationAttempt(mailTo);
      return created;
    } catch (error) {
      if (error instanceof AttemptInProgressError) return undefined;
      throw error;
    }
  }

  async function register({ password, ...profile }: Registrant): Promise<RegistrationResult> {
    // An address of an SSO domain belongs to that organization: its account is made by the first sign-in through the
    // organization's identity provider, never by a stranger registering it first with a password.
    if (await isSsoDomainEmail(db, profile.email)) return { status: 'sso-domain', domain: domainOf(profile.email) };
    const violations = passwordPolicyViolations(password, config.Auth.PasswordPolicy);
    if (violations.length > 0) return { status: 'weak-password', violations };
    // During the read-through window an address the source already holds is that user's: it is migrated now, and
    // the registration meets it as it would after a sweep (taken), instead of making a second account. When the
    // source cannot say (unreadable, too slow, or holding the address twice), no account is made either.
    if (readThrough && (await readThrough.user(profile.email)) === 'unavailable')
      return {
        status: 'source-unavailable',
        retryAfterSeconds: readThrough.retryAfterSeconds,
        message: readThrough.unavailableMessage,
      };
    const create = () =>
      createUserThroughWorkflow({ db, run }, { trigger: 'register', password, user: newUserFrom(profile) });
    if (!config.Auth.RequireConfirmedEmail || !mails) return { status: 'outcome', outcome: await create() };
    const outcome = await atFloor(() => createAndMail(profile.email, create, mails));
    if (outcome && outcome.status !== 'provisioned' && outcome.status !== 'duplicate')
      return { status: 'outcome', outcome };
    return { status: 'mailed' };
  }

  return {
    register,
    /** Auth:RegistrationRateLimit: PermitLimit registrations per WindowSeconds from one client address. */
    budget: { PermitLimit, WindowSeconds },
    /**
     * Auth:RegistrationRateLimit, counted in the store (as the sign-in budget is): every API process, the API and the
     * page spend the same one. `refuse` answers past it, after Retry-After is set.
     */
    limit: (refuse: (res: Response) => void): RequestHandler =>
      storedClientLimit(db, 'registration:address', WindowSeconds, PermitLimit, refuse),
  };
}

export type Registration = ReturnType<typeof createRegistration>;
