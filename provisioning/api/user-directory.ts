import type { Request, Response } from 'express';
import { z } from 'zod';
import { emailAddress, personName } from '../../platform/http/fields';
import { parsedPathParam, type Operations } from '../../platform/http/operations';
import { sendProblem, userNotFound } from '../../platform/http/problem';
import { FIELD_BOUNDS } from '../../platform/security/field-bounds';
import type { Db } from '../../platform/store/database';
import { listProvisionedApps, listProvisionedAppsOf } from '../../platform/store/provisions';
import {
  DuplicateUserError,
  findUser,
  findUserIdByEmail,
  listUsersPage,
  updateUserProfile,
  type UserProfile,
} from '../../platform/store/users';
import { outcomeProblem } from '../outcome-answers';
import type { WorkflowRunner } from '../workflow-runner';
import { deactivationWorkflowId, provisioningWorkflowId } from '../workflows/ids';
import { deactivateAndDeprovision, reactivateAndProvision } from '../workflows/provisioning';
import { attributeValue, customAttributes, userIdParam } from './profile';

/**
 * An admin's change of a user (PATCH): the fields sent change, the rest stay. A name set to null is cleared;
 * `customAttributes` merges key by key (RFC 7396: an attribute set to null is removed). `active: false` deactivates as
 * SCIM does (sessions end, apps deprovision), `active: true` provisions again and then activates.
 */
export const profileChangesSchema = z
  .object({
    email: emailAddress.optional(),
    /** With a new e-mail: the address is known to be the user's; otherwise it must be confirmed again. */
    emailConfirmed: z.boolean().optional(),
    firstName: personName.nullable().optional(),
    lastName: personName.nullable().optional(),
    customAttributes: customAttributes(attributeValue.nullable()).optional(),
    active: z.boolean().optional(),
  })
  .strict()
  .refine((changes) => Object.keys(changes).length > 0, 'send at least one field to change');

/** The largest page `GET /api/v1/profile` answers: a bound on one request's work, as the audit trail's 500. */
const MAX_PAGE = 200;
/** The opaque `after` cursor: the folded e-mail the last page ended at, base64url under a version prefix. */
const CURSOR_PREFIX = 'u1:';
const cursorOf = (normalizedEmail: string) => Buffer.from(CURSOR_PREFIX + normalizedEmail).toString('base64url');
const cursorSchema = z
  .string()
  .max(2 * FIELD_BOUNDS.email)
  .transform((cursor, ctx) => {
    const text = /^[A-Za-z0-9_-]+$/.test(cursor) ? Buffer.from(cursor, 'base64url').toString() : '';
    if (text.startsWith(CURSOR_PREFIX) && text.length > CURSOR_PREFIX.length) return text.slice(CURSOR_PREFIX.length);
    ctx.addIssue({ code: 'custom', message: 'not a cursor of this API: pass the `next` of the previous page' });
    return z.NEVER;
  });

/**
 * `GET /api/v1/profile`: `email` finds one user (the answer a client whose creation answer was lost looks for);
 * otherwise a page of users, searched over e-mail, name and id.
 */
export const userQuerySchema = z
  .object({
    email: emailAddress.optional(),
    search: z.string().trim().min(1).max(FIELD_BOUNDS.email).optional(),
    limit: z.coerce.number().int().min(1).max(MAX_PAGE).default(50),
    after: cursorSchema.optional(),
  })
  .strict()
  .refine((query) => query.email === undefined || (query.search === undefined && query.after === undefined), {
    path: ['email'],
    message: 'finds one user; search and after page through users: send one or the other',
  });

/** Who changed a user and what (field names only: no value is personal data in the trail), for the audit trail. */
export type ProfileChangeAudit = (req: Request, userId: string, fields: string[]) => Promise<void>;

interface DirectoryDependencies {
  db: Db;
  run: WorkflowRunner;
  /** Api:PublicUrl, the issuer of the sessions a deactivation ends (back-channel logout tokens name it). */
  issuer: string;
  /** Records an admin's change of a user in the audit trail. */
  audit?: ProfileChangeAudit;
}

/** The user with this e-mail (case-insensitively), or a 404 answered. */
async function sendUserByEmail({ db }: DirectoryDependencies, res: Response, email: string) {
  const userId = await findUserIdByEmail(db, email);
  const user = userId && (await findUser(db, userId));
  if (!user) return sendProblem(res, userNotFound(`e-mail ${email}`));
  res.json({ ...user, provisionedApps: await listProvisionedApps(db, user.userId) });
}

/** The changes stored, or a 404 or 409 answered (an e-mail another user holds keeps its holder's). */
async function storeChanges(
  { db }: DirectoryDependencies,
  res: Response,
  userId: string,
  changes: Omit<z.infer<typeof profileChangesSchema>, 'active'>,
): Promise<UserProfile | undefined> {
  try {
    const user = await updateUserProfile(db, userId, changes);
    if (!user) sendProblem(res, userNotFound(`id ${userId}`));
    return user;
  } catch (error) {
    if (!(error instanceof DuplicateUserError)) throw error;
    sendProblem(res, { status: 409, title: 'E-mail taken', detail: error.message });
    return undefined;
  }
}

/**
 * `active` as SCIM sets it (scim/user-endpoints.ts): deactivation ends the user's sessions and deprovisions it;
 * activation provisions it again first, and an app's refusal leaves it inactive. A problem, or undefined when done.
 */
async function setActive({ run, issuer }: DirectoryDependencies, userId: string, active: boolean) {
  if (!active) {
    const { found } = await run(deactivateAndDeprovision, {
      workflowId: deactivationWorkflowId(userId),
      args: [{ userId, issuer }],
      search: { userId, trigger: 'admin-api' },
    });
    return found ? undefined : userNotFound(`id ${userId}`);
  }
  const outcome = await run(reactivateAndProvision, {
    workflowId: provisioningWorkflowId(userId),
    args: [{ userId }],
    search: { userId, trigger: 'admin-api' },
  });
  return outcome.status === 'provisioned' ? undefined : outcomeProblem(outcome).problem;
}

/**
 * The admin API's user directory: users listed a page at a time and searched (`GET /api/v1/profile`), and changed
 * (`PATCH /api/v1/profile/{userId}`).
 */
export function userDirectoryOperations(deps: DirectoryDependencies): Operations {
  const { db, audit } = deps;
  return {
    listUsers: async (req, res) => {
      const query = userQuerySchema.parse(req.query);
      if (query.email !== undefined) return sendUserByEmail(deps, res, query.email);
      // One more than the page: the last page says so (next: null) instead of leaving an empty one to fetch.
      const found = await listUsersPage(db, { search: query.search, afterEmail: query.after, limit: query.limit + 1 });
      const users = found.slice(0, query.limit);
      const apps = await listProvisionedAppsOf(
        db,
        users.map((user) => user.userId),
      );
      res.json({
        users: users.map(({ normalizedEmail: _key, ...user }) => ({ ...user, provisionedApps: apps.get(user.userId) })),
        next: found.length > query.limit ? cursorOf(users[users.length - 1].normalizedEmail) : null,
      });
    },

    updateUser: async (req, res) => {
      const userId = parsedPathParam(req, 'userId', userIdParam);
      const { active, ...changes } = profileChangesSchema.parse(req.body);
      const before = await findUser(db, userId);
      if (!before) return sendProblem(res, userNotFound(`id ${userId}`));
      const changed = Object.keys(changes).length > 0 ? await storeChanges(deps, res, userId, changes) : before;
      if (!changed) return;
      if (active !== undefined && active !== changed.active) {
        const problem = await setActive(deps, userId, active);
        if (problem) return sendProblem(res, problem);
      }
      await audit?.(req, userId, Object.keys({ ...changes, ...(active !== undefined && { active }) }));
      const user = await findUser(db, userId);
      if (!user) return sendProblem(res, userNotFound(`id ${userId}`));
      res.json({ ...user, provisionedApps: await listProvisionedApps(db, userId) });
    },
  };
}
