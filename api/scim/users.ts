import { Router, type Request, type Response } from 'express';
import type { PasswordPolicy } from '../../config/schema';
import { hashPassword } from '../../passwords/native';
import { passwordPolicyViolations } from '../../passwords/policy';
import type { Db } from '../../store/database';
import { findScimUser, listScimUsers, updateScimUser, type ScimUserRow, type UserFilter } from '../../store/scim-users';
import { DuplicateUserError, normalize } from '../../store/users';
import { deactivationWorkflowId, reactivationWorkflowId } from '../../workflows/ids';
import { deactivateAndDeprovision, reactivateAndProvision, type CreationOutcome } from '../../workflows/provisioning';
import { createUserThroughWorkflow } from '../user-creation';
import type { WorkflowRunner } from '../workflow-runner';
import { describeIssues } from '../problem';
import { ScimError, SCIM_CONTENT_TYPE } from './errors';
import { always, never, scimFilterToSql, type AttributeMap } from './filter';
import { applyPatch, baseUrl, checkIfMatch, chooseEmail, listResponse, parseListQuery, scimUserInputSchema, userResource, type ScimUserInput } from './resources';
import type { Database } from '../../store/schema';

const userAttributes: AttributeMap<Database, 'users'> = {
  id: (eb, v) => eb('id', '=', String(v)),
  username: (eb, v) => eb('normalized_user_name', '=', normalize(String(v))),
  externalid: (eb, v) => eb('external_id', '=', String(v)),
  'emails.value': (eb, v) => eb('normalized_email', '=', normalize(String(v))),
  emails: (eb, v) => eb('normalized_email', '=', normalize(String(v))),
  'emails.type': (_eb, v) => (String(v).toLowerCase() === 'work' ? always() : never()),
  'emails.primary': (_eb, v) => (v === true ? always() : never()),
  active: (eb, v) => eb('active', '=', v === true || String(v).toLowerCase() === 'true'),
  'name.givenname': (eb, v) => eb('first_name', '=', String(v)),
  'name.familyname': (eb, v) => eb('last_name', '=', String(v)),
};

/** A provisioning outcome in SCIM terms: the app and its reason as the error detail. */
function outcomeError(outcome: Exclude<CreationOutcome, { status: 'provisioned' }>): ScimError {
  switch (outcome.status) {
    case 'duplicate':
      return new ScimError(409, outcome.detail, 'uniqueness');
    case 'rejected':
      return new ScimError(422, `provisioning rejected by app ${outcome.appId}: ${outcome.reason}`);
    case 'unknown-apps':
      return new ScimError(422, `provisioning apps not configured: ${outcome.appIds.join(', ')}`);
    case 'partially-confirmed':
      return new ScimError(502, `provisioning confirmed by ${outcome.confirmedApps.join(', ')} but not by ${outcome.unconfirmedApps.join(', ')}: ${outcome.reason}`);
    case 'not-found':
      return new ScimError(404, `no user ${outcome.userId}`);
  }
}

function parseUser(body: unknown, policy: PasswordPolicy): ScimUserInput & { email: string } {
  const parsed = scimUserInputSchema.safeParse(body);
  if (!parsed.success) {
    throw new ScimError(400, describeIssues(parsed.error), 'invalidValue');
  }
  const email = chooseEmail(parsed.data);
  if (!email) throw new ScimError(400, 'emails: an e-mail address is required (or a userName that is one)', 'invalidValue');
  if (parsed.data.password !== undefined) {
    const violations = passwordPolicyViolations(parsed.data.password, policy);
    if (violations.length > 0) throw new ScimError(400, violations.map((v) => `password: ${v}`).join('; '), 'invalidValue');
  }
  return { ...parsed.data, email };
}

export function scimUsersRouter({ db, run, passwordPolicy }: { db: Db; run: WorkflowRunner; passwordPolicy: PasswordPolicy }): Router {
  const router = Router();

  async function load(id: string): Promise<ScimUserRow> {
    const row = await findScimUser(db, id);
    if (!row) throw new ScimError(404, `no user ${id}`);
    return row;
  }

  function send(req: Request, res: Response, row: ScimUserRow, status = 200): void {
    const resource = userResource(row, baseUrl(req));
    if (status === 201) res.location(resource.meta.location);
    res.status(status).type(SCIM_CONTENT_TYPE).set('ETag', resource.meta.version).json(resource);
  }

  async function setActive(row: ScimUserRow, active: boolean): Promise<void> {
    if (active === row.active) return;
    if (!active) {
      await run(deactivateAndDeprovision, { workflowId: deactivationWorkflowId(row.id), onRunning: 'attach', args: [{ userId: row.id }] });
      return;
    }
    const outcome = await run(reactivateAndProvision, { workflowId: reactivationWorkflowId(row.id), onRunning: 'attach', args: [{ userId: row.id }] });
    if (outcome.status !== 'provisioned') throw outcomeError(outcome);
  }

  /** PUT and PATCH end here: attributes first, then the change of `active` (deactivate and deprovision, or provision and activate). */
  async function replace(row: ScimUserRow, desired: ScimUserInput & { email: string }): Promise<ScimUserRow> {
    try {
      await updateScimUser(db, row.id, {
        userName: desired.userName,
        email: desired.email,
        firstName: desired.name?.givenName ?? null,
        lastName: desired.name?.familyName ?? null,
        externalId: desired.externalId ?? null,
        passwordHash: desired.password === undefined ? undefined : await hashPassword(desired.password),
      });
    } catch (error) {
      if (error instanceof DuplicateUserError) throw new ScimError(409, error.message, 'uniqueness');
      throw error;
    }
    if (desired.active !== undefined) await setActive(row, desired.active);
    return load(row.id);
  }

  router.post('/', async (req, res) => {
    const input = parseUser(req.body, passwordPolicy);
    const outcome = await createUserThroughWorkflow(
      { db, run },
      {
        trigger: 'scim',
        password: input.password,
        user: {
          email: input.email,
          userName: input.userName,
          externalId: input.externalId ?? null,
          firstName: input.name?.givenName ?? null,
          lastName: input.name?.familyName ?? null,
          organizationId: null,
          customAttributes: {},
        },
      },
    );
    if (outcome.status !== 'provisioned') throw outcomeError(outcome);
    const row = await load(outcome.user.userId);
    if (input.active === false) await setActive(row, false);
    send(req, res, await load(row.id), 201);
  });

  router.get('/', async (req, res) => {
    const { startIndex, count, filter } = parseListQuery(req.query);
    const where: UserFilter | undefined = filter ? scimFilterToSql(filter, userAttributes) : undefined;
    const { total, rows } = await listScimUsers(db, where, startIndex, count);
    res.type(SCIM_CONTENT_TYPE).json(listResponse(rows.map((row) => userResource(row, baseUrl(req))), total, startIndex));
  });

  router.get('/:id', async (req, res) => {
    send(req, res, await load(req.params.id));
  });

  router.put('/:id', async (req, res) => {
    const row = await load(req.params.id);
    checkIfMatch(req, row.updated_at, 'user');
    send(req, res, await replace(row, parseUser(req.body, passwordPolicy)));
  });

  router.patch('/:id', async (req, res) => {
    const row = await load(req.params.id);
    checkIfMatch(req, row.updated_at, 'user');
    const patched = applyPatch(userResource(row, baseUrl(req)), req.body);
    send(req, res, await replace(row, parseUser(patched, passwordPolicy)));
  });

  /** The spec's soft-delete: deactivated and deprovisioned, still listed with active:false. */
  router.delete('/:id', async (req, res) => {
    const row = await load(req.params.id);
    checkIfMatch(req, row.updated_at, 'user');
    await setActive(row, false);
    res.status(204).end();
  });

  return router;
}
