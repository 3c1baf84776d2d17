import { setTimeout as delay } from 'node:timers/promises';
import type { Request, Response } from 'express';
import type { DownstreamAppState } from './state';

/** Simulated slowness must not keep a stopping process alive. */
const sleep = (ms: number) => delay(ms, undefined, { ref: false });

const transactionIdOf = (req: Request) => String((req.body as { transactionId?: unknown } | undefined)?.transactionId);

/** Try: a pending record keyed by transactionId, unless the behaviour says to answer otherwise. */
export async function answerTry(state: DownstreamAppState, req: Request, res: Response) {
  const b = state.behaviour;
  if (b.tryDelayMs) await sleep(b.tryDelayMs);
  if (b.tryRedirectTo) return res.redirect(307, b.tryRedirectTo);
  if (b.tryStatus && b.tryStatus !== 200) return res.status(b.tryStatus).json({ error: 'try failed' });
  if (b.tryBody !== undefined) return res.type('application/json').send(b.tryBody);
  const { transactionId, userId, email } = (req.body ?? {}) as {
    transactionId?: unknown;
    userId?: unknown;
    email?: unknown;
  };
  if (typeof transactionId !== 'string' || typeof userId !== 'string')
    return res.status(400).json({ error: 'transactionId and userId are required' });
  if (b.rejectWith) return res.json({ approved: false, reason: b.rejectWith });
  if (b.rejectEmailsMatching && new RegExp(b.rejectEmailsMatching).test(String(email)))
    return res.json({ approved: false, reason: 'this app does not take that e-mail' });
  // Idempotent per transaction: a repeated Try keeps the first pending record.
  if (!state.records.has(transactionId)) {
    state.records.set(transactionId, {
      transactionId,
      userId,
      email: String(email),
      state: 'pending',
      createdAt: Date.now(),
    });
  }
  res.json({ approved: true, organizationId: b.assignOrganization, customAttributes: b.assignAttributes });
}

/** Confirm promotes the pending record. */
export async function answerConfirm(state: DownstreamAppState, req: Request, res: Response) {
  if (state.behaviour.confirmDelayMs) await sleep(state.behaviour.confirmDelayMs);
  if (state.behaviour.confirmStatus && state.behaviour.confirmStatus !== 200)
    return res.status(state.behaviour.confirmStatus).json({ error: 'confirm failed' });
  const record = state.records.get(transactionIdOf(req));
  if (!record) return res.status(404).json({ error: 'no pending record for this transaction (expired or cancelled)' });
  record.state = 'confirmed';
  res.json({ confirmed: true });
}

/** Cancel drops the pending record. */
export async function answerCancel(state: DownstreamAppState, req: Request, res: Response) {
  if (state.behaviour.cancelDelayMs) await sleep(state.behaviour.cancelDelayMs);
  if (state.behaviour.cancelStatus && state.behaviour.cancelStatus !== 200)
    return res.status(state.behaviour.cancelStatus).json({ error: 'cancel failed' });
  const record = state.records.get(transactionIdOf(req));
  // Cancel only ever removes a pending record; a confirmed user is removed by DELETE /users/{id}.
  if (record?.state === 'pending') state.records.delete(record.transactionId);
  res.json({ cancelled: true });
}

/** DELETE /users/{id}: every record of the user goes. */
export function answerDelete(state: DownstreamAppState, req: Request<{ userId: string }>, res: Response) {
  if (state.behaviour.deleteStatus && state.behaviour.deleteStatus !== 200)
    return res.status(state.behaviour.deleteStatus).json({ error: 'delete failed' });
  for (const [id, record] of state.records) if (record.userId === req.params.userId) state.records.delete(id);
  state.deletedUsers.push(req.params.userId);
  res.status(204).end();
}
