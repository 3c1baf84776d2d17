import { outcomeProblem } from '../../provisioning/outcome-answers';
import { createUserThroughWorkflow, newUserFrom } from '../../provisioning/creation';
import { AttemptInProgressError } from '../../platform/temporal/run-errors';
import type { WorkflowRunner } from '../../provisioning/workflow-runner';
import type { Db } from '../../platform/store/database';
import { domainsOf, findUserByLogin, linkLogin } from '../store/sso-provider-configs';
import { domainOf, findLinkCandidate, findUserIdByEmail } from '../../platform/store/users';
import { logger } from '../../platform/observability/logger';
import type { SourceReadThrough } from '../source-read-through';

/** Who an upstream identity provider says signed in. */
export interface FederatedIdentity {
  kind: 'saml' | 'oidc';
  providerId: string;
  providerName: string;
  /** The source's LoginProvider scheme names that mean this provider (its id is always one). */
  loginProviderNames: string[];
  /** The provider may create accounts for addresses outside its SSO domains (its `allowOtherDomains`). */
  allowOtherDomains: boolean;
  subject: string;
  email?: string;
  givenName?: string;
  familyName?: string;
}

/** A refusal with `retryAfterSeconds` is temporary (503 with Retry-After). */
export type FederatedOutcome =
  { status: 'signed-in'; userId: string } | { status: 'refused'; reason: string; retryAfterSeconds?: number };

const SOURCE_UNAVAILABLE =
  'Your account could not be checked against the previous sign-in system just now. Please try again in a little while; if this keeps happening, tell your administrator.';

const DEACTIVATED = 'This account is deactivated.';

/** The e-mail's account exists and the provider speaks for its domain: linked unless that would be unsafe. */
async function linkExisting(
  db: Db,
  identity: FederatedIdentity,
  existingId: string,
  link: () => Promise<unknown>,
): Promise<FederatedOutcome> {
  const existing = await findLinkCandidate(db, existingId);
  if (!existing?.active) return { status: 'refused', reason: DEACTIVATED };
  // Whoever set that password may not be the address's owner (anyone could have registered it before the domain
  // was an SSO domain): linking would let the password keep opening the owner's account.
  if (existing.hasPassword && !existing.emailConfirmed) {
    logger.warn(
      `federation: ${identity.providerName} signed in a user whose e-mail matches account ${existingId}, which has a password and an unconfirmed e-mail; not linked`,
    );
    return {
      status: 'refused',
      reason: `An account with this e-mail address already exists here with its own password, and its address was never confirmed, so it cannot be joined to ${identity.providerName}. Ask your administrator to confirm or remove that account (account id ${existingId}), then sign in again.`,
    };
  }
  await link();
  return { status: 'signed-in', userId: existingId };
}

/**
 * The user a federated sign-in is for: the owner of the external login (migrated ones through the provider's scheme
 * names); else the user with the same e-mail, linked only when the e-mail's domain is one of this provider's SSO
 * domains (the provider speaks for that domain, not for others); else, for an address of its SSO domains (or any, with
 * the provider's allowOtherDomains), a new user, created and provisioned through the provisioning workflow (trigger
 * `saml` or `oidc`), linked once every app confirmed.
 */
export async function federatedUser(
  deps: { db: Db; run: WorkflowRunner; readThrough?: SourceReadThrough },
  identity: FederatedIdentity,
): Promise<FederatedOutcome> {
  const { db } = deps;
  const names = [...new Set([identity.providerId, ...identity.loginProviderNames])];
  const { email } = identity;
  let owner = await findUserByLogin(db, names, identity.subject);
  // During the cutover's read-through window, a user the last sweep missed is migrated first (with its external
  // logins), so the sign-in finds it rather than making a second account for the same person.
  if (!owner && email && deps.readThrough && !(await findUserIdByEmail(db, email))) {
    const found = await deps.readThrough.user(email);
    if (found === 'migrated') owner = await findUserByLogin(db, names, identity.subject);
    // The source may hold this person: an account made now would be a second one (fail closed, try again later).
    if (found === 'unavailable')
      return {
        status: 'refused',
        reason: deps.readThrough.unavailableMessage ?? SOURCE_UNAVAILABLE,
        retryAfterSeconds: deps.readThrough.retryAfterSeconds,
      };
  }
  if (owner)
    return owner.active ? { status: 'signed-in', userId: owner.id } : { status: 'refused', reason: DEACTIVATED };
  if (!email) return { status: 'refused', reason: `${identity.providerName} did not say the e-mail address.` };
  const link = (userId: string) =>
    linkLogin(db, {
      loginProvider: identity.providerId,
      providerKey: identity.subject,
      displayName: identity.providerName,
      userId,
    });

  const domain = domainOf(email);
  const ownDomain = (await domainsOf(db, identity.kind, identity.providerId)).includes(domain);
  const existingId = await findUserIdByEmail(db, email);
  if (existingId) {
    if (!ownDomain)
      return {
        status: 'refused',
        reason: `An account with ${email} exists, and ${identity.providerName} does not sign in users of ${domain}. Sign in the way you usually do.`,
      };
    return linkExisting(db, identity, existingId, () => link(existingId));
  }
  // A provider speaks for its own SSO domains only: any tenant of a multi-tenant IdP (or an IdP whose users edit
  // their own e-mail) can assert any address, and the account made for it would be that address's from then on.
  if (!ownDomain && !identity.allowOtherDomains) {
    logger.warn(
      `federation: ${identity.providerName} (${identity.kind} provider ${identity.providerId}) asserted an address of ${domain}, not one of its SSO domains; no account made`,
    );
    return {
      status: 'refused',
      reason: `${identity.providerName} does not sign in users of ${domain}. Sign in the way you usually do, or ask your administrator.`,
    };
  }

  try {
    const outcome = await createUserThroughWorkflow(deps, {
      trigger: identity.kind,
      user: newUserFrom({ email, firstName: identity.givenName, lastName: identity.familyName }),
    });
    if (outcome.status !== 'provisioned')
      return { status: 'refused', reason: outcomeProblem(outcome, { revealIds: false }).problem.detail };
    await link(outcome.user.userId);
    return { status: 'signed-in', userId: outcome.user.userId };
  } catch (error) {
    if (error instanceof AttemptInProgressError)
      return { status: 'refused', reason: 'Your account is being set up right now; try again in a moment.' };
    throw error;
  }
}
