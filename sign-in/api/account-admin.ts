import type { Request, Response } from 'express';
import { z } from 'zod';
import { adminActorOf } from '../../platform/http/identity-admin';
import { parsedPathParam, type Operations } from '../../platform/http/operations';
import { sendProblem, userNotFound } from '../../platform/http/problem';
import { FIELD_BOUNDS } from '../../platform/security/field-bounds';
import { findRecoveryUserById, removeMfa, unlockUser } from '../store/accounts';
import { AUDIT_EVENT_TYPES, listAuditEvents, recordAuditEvent, type AuditEventType } from '../store/audit-events';
import type { Db } from '../../platform/store/database';
import { findUser } from '../../platform/store/users';
import type { RecoveryMails } from '../recovery/recovery-router';
import type { SignOut } from '../sign-out-notices';

const userIdParam = z.string().min(1).max(FIELD_BOUNDS.id);

export const auditQuerySchema = z
  .object({
    userId: z.string().min(1).max(FIELD_BOUNDS.id).optional(),
    type: z.enum(Object.keys(AUDIT_EVENT_TYPES) as [AuditEventType, ...AuditEventType[]]).optional(),
    after: z.iso.datetime({ offset: true }).optional(),
    before: z
      .string()
      .regex(/^\d{1,18}$/, 'the `next` of the previous page')
      .optional(),
    limit: z.coerce.number().int().min(1).max(500).default(100),
  })
  .strict();

/**
 * What an operator does for a user who is stuck (IdentityAdmin): unlock, remove two-step verification, end every sign-in,
 * send the reset mail; and the audit trail. Each action is recorded with who did it.
 */
export function accountAdminOperations({
  db,
  mails,
  signOut,
}: {
  db: Db;
  mails?: RecoveryMails;
  signOut: SignOut;
}): Operations {
  /** The user of the path, or a 404 answered. */
  async function userOf(req: Request, res: Response): Promise<string | undefined> {
    const userId = parsedPathParam(req, 'userId', userIdParam);
    if (await findUser(db, userId)) return userId;
    sendProblem(res, userNotFound(`id ${userId}`));
    return undefined;
  }
  const byAdmin = (req: Request) => ({ actor: adminActorOf(req), clientAddress: req.ip });

  return {
    unlockUser: async (req, res) => {
      const userId = await userOf(req, res);
      if (!userId) return;
      await unlockUser(db, userId);
      await recordAuditEvent(db, { type: 'account-unlocked', userId, ...byAdmin(req) });
      res.status(204).end();
    },
    removeUserMfa: async (req, res) => {
      const userId = await userOf(req, res);
      if (!userId) return;
      const had = await removeMfa(db, userId);
      await recordAuditEvent(db, { type: 'mfa-removed', userId, ...byAdmin(req), detail: { had } });
      res.status(204).end();
    },
    endUserSessions: async (req, res) => {
      const userId = await userOf(req, res);
      if (!userId) return;
      const sessions = await signOut.everywhere(userId);
      await recordAuditEvent(db, { type: 'sessions-revoked', userId, ...byAdmin(req), detail: { sessions } });
      res.status(204).end();
    },
    // The mail's links lead to the sign-in pages: the route exists where they do.
    ...(mails && { sendPasswordReset: sendPasswordReset(db, mails, userOf, byAdmin) }),
    listAuditEvents: auditTrail(db),
  };
}

/** The reset mail, sent for an operator (within the per-account mail budget of Auth:PasswordReset). */
function sendPasswordReset(
  db: Db,
  mails: RecoveryMails,
  userOf: (req: Request, res: Response) => Promise<string | undefined>,
  byAdmin: (req: Request) => { actor: string; clientAddress: string | undefined },
) {
  return async (req: Request, res: Response) => {
    const userId = await userOf(req, res);
    if (!userId) return;
    const user = await findRecoveryUserById(db, userId);
    if (!user)
      return sendProblem(res, {
        status: 409,
        title: 'User deactivated',
        detail: `user ${userId} is deactivated; reactivate it before sending a reset mail`,
      });
    const sent = await mails.passwordReset(user);
    await recordAuditEvent(db, { type: 'password-reset-requested', userId, ...byAdmin(req), detail: { sent } });
    if (!sent)
      return sendProblem(res, {
        status: 429,
        title: 'Too many reset mails',
        detail: `user ${userId} was sent the most reset mails Auth:PasswordReset allows in its window; try again later`,
      });
    res.status(202).end();
  };
}

/** `GET /api/v1/audit-events`: newest first, a page at a time. */
function auditTrail(db: Db) {
  return async (req: Request, res: Response) => {
    const query = auditQuerySchema.parse(req.query);
    const rows = await listAuditEvents(db, {
      userId: query.userId,
      type: query.type,
      before: query.before,
      after: query.after ? new Date(query.after) : undefined,
      limit: query.limit,
    });
    res.json({
      events: rows.map((row) => ({
        id: row.id,
        at: row.at,
        type: row.type,
        userId: row.user_id,
        clientId: row.client_id,
        clientAddress: row.client_address,
        actor: row.actor,
        detail: row.detail,
      })),
      next: rows.length === query.limit ? rows[rows.length - 1].id : null,
    });
  };
}
