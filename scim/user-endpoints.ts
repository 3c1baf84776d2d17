import { pathParam, type Operations } from '../platform/http/operations';
import type { PasswordPolicy } from '../platform/config/config-schema';
import { hashPassword } from '../platform/security/password-hashing';
import { passwordPolicyViolations } from '../platform/security/password-policy';
import {
  findScimUser,
  isScimDeleted,
  listScimUsers,
  scimDeletedHolder,
  markScimDeleted,
  customAttributeCondition,
  scimUserConditions,
  setScimAttributes,
  updateScimUser,
  type ScimUserRow,
  type UserFilter,
} from './store/scim-users';
import type { ScimEmail, ScimManager, ScimName } from '../platform/store/schema';
import { DuplicateUserError } from '../platform/store/users';
import { deactivationWorkflowId, provisioningWorkflowId } from '../provisioning/workflows/ids';
import {
  deactivateAndDeprovision,
  reactivateAndProvision,
  type CreationOutcome,
} from '../provisioning/workflows/provisioning';
import { idempotentCreation } from '../platform/http/idempotency';
import type { ScimDependencies } from './scim-dependencies';
import { outcomeProblem } from '../provisioning/outcome-answers';
import { createUserThroughWorkflow } from '../provisioning/creation';
import { describeIssues } from '../platform/http/problem';
import { ScimError, scimErrorAnswer, SCIM_CONTENT_TYPE } from './scim-errors';
import { scimFilterToSql, type AttributeMap } from './filter';
import { applyPatch } from './patch';
import { USER_RESOURCE_SCHEMA } from './published-schemas';
import {
  checkIfMatch,
  chooseEmail,
  emailListOf,
  ENTERPRISE_ATTRIBUTES,
  ENTERPRISE_SCHEMA,
  enterpriseAttributesOf,
  managerOf,
  nameOf,
  withEnterpriseAttributes,
  scimUserInputSchema,
  userResource,
  type ScimUserInput,
} from './resource-shapes';
import { resourceReads } from './resource-reads';
import type { Database } from '../platform/store/schema';

/** The SCIM attributes a user filter may compare (lower-cased paths), each with its condition in the store. */
const userAttributes: AttributeMap<Database, 'users'> = {
  id: scimUserConditions.id,
  username: scimUserConditions.userName,
  externalid: scimUserConditions.externalId,
  'emails.value': scimUserConditions.anyEmail,
  emails: scimUserConditions.anyEmail,
  'emails.type': scimUserConditions.emailType,
  'emails.primary': scimUserConditions.primaryEmail,
  active: scimUserConditions.active,
  'name.givenname': scimUserConditions.givenName,
  'name.familyname': scimUserConditions.familyName,
  ...Object.fromEntries(
    [...ENTERPRISE_ATTRIBUTES, 'manager.value'].map((name) => [
      `${ENTERPRISE_SCHEMA.toLowerCase()}:${name.toLowerCase()}`,
      customAttributeCondition(name.replace('.value', '')),
    ]),
  ),
};

/** A provisioning outcome in SCIM terms: the same answers as the admin API's (outcomeProblem), in SCIM's error schema. */
function outcomeError(outcome: Exclude<CreationOutcome, { status: 'provisioned' }>): ScimError {
  const { problem } = outcomeProblem(outcome);
  const holder = outcome.status === 'duplicate' && typeof problem.userId === 'string' ? ` (id ${problem.userId})` : '';
  // SCIM's error schema has no member of its own for it: the attempt (its workflow id) goes into the detail.
  const attempt = typeof problem.attemptId === 'string' ? ` (attempt ${problem.attemptId})` : '';
  return new ScimError(
    problem.status,
    `${problem.detail}${holder}${attempt}`,
    outcome.status === 'duplicate' ? 'uniqueness' : undefined,
  );
}

/** A SCIM user as sent, with what the service derives from it: the sign-in e-mail and the attributes kept as sent. */
type ParsedUser = ScimUserInput & {
  email: string;
  emailList: ScimEmail[];
  sentName: ScimName | null;
  manager: ScimManager | null;
};

/**
 * A userName or e-mail held by a user deleted through SCIM: that record stays for audit, so the name stays taken; the
 * answer says who holds it and how an operator frees it.
 */
const heldByDeleted = (detail: string, id: string) =>
  new ScimError(
    409,
    `${detail} (id ${id}), a user deleted through SCIM whose record is kept for audit; an administrator frees its userName and e-mail by deleting it for good (DELETE /api/v1/profile/${id})`,
    'uniqueness',
  );

/** A creation refused as a duplicate of a user deleted through SCIM, in those words. */
async function duplicateError(db: ScimDependencies['db'], outcome: CreationOutcome): Promise<ScimError | undefined> {
  if (outcome.status !== 'duplicate' || !outcome.existingUserId) return undefined;
  if (!(await isScimDeleted(db, outcome.existingUserId))) return undefined;
  return heldByDeleted(outcome.detail, outcome.existingUserId);
}

function parseUser(body: unknown, policy: PasswordPolicy): ParsedUser {
  const parsed = scimUserInputSchema.safeParse(body);
  if (!parsed.success) {
    throw new ScimError(400, describeIssues(parsed.error), 'invalidValue');
  }
  const email = chooseEmail(parsed.data);
  if (!email)
    throw new ScimError(
      400,
      "emails: send at least one e-mail address (emails[].value), or a userName that is one; every downstream app receives the user's e-mail",
      'invalidValue',
    );
  if (parsed.data.password !== undefined) {
    const violations = passwordPolicyViolations(parsed.data.password, policy);
    if (violations.length > 0)
      throw new ScimError(400, violations.map((v) => `password: ${v}`).join('; '), 'invalidValue');
  }
  return {
    ...parsed.data,
    email,
    emailList: emailListOf(parsed.data, email),
    sentName: nameOf(parsed.data) ?? null,
    manager: managerOf(parsed.data) ?? null,
  };
}

/** The new user a SCIM creation makes. */
function newUserOf(input: ParsedUser) {
  return {
    email: input.email,
    userName: input.userName,
    externalId: input.externalId ?? null,
    firstName: input.sentName?.givenName ?? null,
    lastName: input.sentName?.familyName ?? null,
    organizationId: null,
    customAttributes: enterpriseAttributesOf(input),
    // The identity provider that provisions the user manages the address: it counts as confirmed.
    emailConfirmed: true,
  };
}

/** Every user is active or not, and has an e-mail every app receives: a PATCH cannot remove those two. */
function keepsRequired(patched: unknown): Record<string, unknown> {
  // An operation with an empty path replaces the whole resource: its value must be a user, not "x", 5 or true.
  if (!patched || typeof patched !== 'object' || Array.isArray(patched))
    throw new ScimError(
      400,
      'Operations: the patched user is not an object (a value without a path must be one)',
      'invalidValue',
    );
  const user = patched as Record<string, unknown>;
  if (!('active' in user))
    throw new ScimError(400, 'active: cannot be removed; replace it with false to deactivate the user', 'invalidValue');
  if (!Array.isArray(user.emails) || user.emails.length === 0)
    throw new ScimError(
      400,
      "emails: cannot be removed; every downstream app receives the user's e-mail (replace it instead)",
      'invalidValue',
    );
  return user;
}

/** `active` as SCIM sets it: deactivate and deprovision, or provision and then activate (422 when an app refuses). */
async function setUserActive(
  { run, issuer }: Pick<ScimDependencies, 'run' | 'issuer'>,
  row: ScimUserRow,
  active: boolean,
): Promise<void> {
  if (active === row.active) return;
  if (!active) {
    await run(deactivateAndDeprovision, {
      workflowId: deactivationWorkflowId(row.id),
      args: [{ userId: row.id, issuer }],
      search: { userId: row.id, trigger: 'scim' },
    });
    return;
  }
  const outcome = await run(reactivateAndProvision, {
    workflowId: provisioningWorkflowId(row.id),
    args: [{ userId: row.id }],
    search: { userId: row.id, trigger: 'scim' },
  });
  if (outcome.status !== 'provisioned') throw outcomeError(outcome);
}

/** The attributes of a PUT or PATCH, stored; a userName or e-mail another user holds is a 409 naming the way out. */
async function storeChanges(db: ScimDependencies['db'], row: ScimUserRow, desired: ParsedUser): Promise<void> {
  try {
    await updateScimUser(db, row.id, {
      userName: desired.userName,
      email: desired.email,
      firstName: desired.sentName?.givenName ?? null,
      lastName: desired.sentName?.familyName ?? null,
      externalId: desired.externalId ?? null,
      customAttributes: withEnterpriseAttributes(row.custom_attributes, desired),
      emails: desired.emailList,
      name: desired.sentName,
      manager: desired.manager,
      passwordHash: desired.password === undefined ? undefined : await hashPassword(desired.password),
    });
  } catch (error) {
    if (!(error instanceof DuplicateUserError)) throw error;
    const holder = await scimDeletedHolder(db, row.id, desired.userName, desired.email);
    throw holder ? heldByDeleted(error.message, holder) : new ScimError(409, error.message, 'uniqueness');
  }
}

export function scimUsersOperations({ db, run, passwordPolicy, scimUrl, issuer }: ScimDependencies): Operations {
  const usersUrl = `${scimUrl}/Users`;

  const { load, send, reads } = resourceReads<ScimUserRow, UserFilter>({
    noun: 'user',
    find: (id) => findScimUser(db, id),
    list: (where, startIndex, count) => listScimUsers(db, where, startIndex, count),
    filterToSql: (filter) => scimFilterToSql(filter, userAttributes),
    resource: (row) => userResource(row, usersUrl),
  });

  const setActive = (row: ScimUserRow, active: boolean) => setUserActive({ run, issuer }, row, active);

  /** PUT and PATCH end here: attributes first, then the change of `active` (deactivate and deprovision, or provision and activate). */
  async function replace(row: ScimUserRow, desired: ParsedUser): Promise<ScimUserRow> {
    await storeChanges(db, row, desired);
    if (desired.active !== undefined) await setActive(row, desired.active);
    return load(row.id);
  }

  return {
    ...reads,
    createScimUser: async (req, res) => {
      const input = parseUser(req.body, passwordPolicy);
      await idempotentCreation(db, 'POST /scim/v2/Users', req, res, async (userId) => {
        const outcome = await createUserThroughWorkflow(
          { db, run },
          {
            trigger: 'scim',
            password: input.password,
            userId,
            user: newUserOf(input),
          },
        );
        if (outcome.status !== 'provisioned')
          return scimErrorAnswer((await duplicateError(db, outcome)) ?? outcomeError(outcome));
        const sent = { emails: input.emailList, name: input.sentName, manager: input.manager };
        await setScimAttributes(db, outcome.user.userId, sent);
        const row = await load(outcome.user.userId);
        if (input.active === false) await setActive(row, false);
        const resource = userResource(await load(row.id), usersUrl);
        return {
          status: 201,
          contentType: SCIM_CONTENT_TYPE,
          headers: { Location: resource.meta.location, ETag: resource.meta.version },
          body: resource,
        };
      });
    },
    replaceScimUser: async (req, res) => {
      const row = await load(pathParam(req, 'id'));
      checkIfMatch(req, row.updated_at, 'user');
      send(res, await replace(row, parseUser(req.body, passwordPolicy)));
    },
    modifyScimUser: async (req, res) => {
      const row = await load(pathParam(req, 'id'));
      checkIfMatch(req, row.updated_at, 'user');
      const patched = keepsRequired(applyPatch(userResource(row, usersUrl), req.body, USER_RESOURCE_SCHEMA));
      send(res, await replace(row, parseUser(patched, passwordPolicy)));
    },
    /**
     * RFC 7644 §3.6: afterwards the user answers 404 and is left out of queries. The record stays, deactivated and
     * deprovisioned (the spec's soft delete), for audit and the admin API.
     */
    deleteScimUser: async (req, res) => {
      const row = await load(pathParam(req, 'id'));
      checkIfMatch(req, row.updated_at, 'user');
      await setActive(row, false);
      if (!(await markScimDeleted(db, row.id))) throw new ScimError(404, `no user ${row.id}`);
      res.status(204).end();
    },
  };
}
