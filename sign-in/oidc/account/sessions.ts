import type { Request, Response } from 'express';
import { z } from 'zod';
import { FIELD_BOUNDS } from '../../../platform/security/field-bounds';
import { recordAuditEvent } from '../../store/audit-events';
import { formField } from '../forms';
import type { AccountContext } from './account-context';
import { overview } from './overview';

const endOneForm = z.object({ session: formField(FIELD_BOUNDS.id) });

/**
 * "End this session": one of the user's other sign-ins ends as "sign out everywhere" ends them all (its grants, their
 * refresh tokens and codes, and a back-channel logout to each client of it that takes one); this browser stays. A
 * session that is not the user's, or has ended already, changes nothing.
 */
export const postEndSession = (ctx: AccountContext) => async (req: Request, res: Response) => {
  const user = await ctx.poster(req, res);
  if (!user) return;
  const parsed = endOneForm.safeParse(req.body);
  if (!parsed.success || parsed.data.session === user.sessionId)
    return overview(ctx, res, user, undefined, 'Choose a session to end.', 400);
  const ended = await ctx.signOut.session(user.id, parsed.data.session);
  if (!ended) return overview(ctx, res, user, 'That session had ended already.');
  await recordAuditEvent(ctx.db, { type: 'session-ended', userId: user.id, clientAddress: req.ip });
  await overview(ctx, res, user, 'The session is ended: that device and its applications are signed out.');
};
