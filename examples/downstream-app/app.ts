import { createServer } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import express from 'express';
import { closeServer, listen, listeningUrl } from '../../platform/net/listen';

/** Simulated slowness must not keep a stopping process alive. */
const sleep = (ms: number) => delay(ms, undefined, { ref: false });

/**
 * A reference downstream app: the other side of the provisioning protocol.
 * Try stores a pending record keyed by transactionId, Confirm promotes it, Cancel drops it,
 * and pending records that nobody confirmed expire after a TTL.
 */
export interface Behaviour {
  /** Answer Try with approved:false and this reason. */
  rejectWith?: string;
  /** Answer Try with approved:false for users whose e-mail matches this pattern (a regular expression). */
  rejectEmailsMatching?: string;
  /** Answer Try with this HTTP status instead of 200. */
  tryStatus?: number;
  /** Wait this long before answering Try. */
  tryDelayMs?: number;
  /** Answer Try with a redirect to this URL (the service must not follow it). */
  tryRedirectTo?: string;
  /** Answer Try with this exact body (200, application/json): an answer of any size or content, for tests. */
  tryBody?: string;
  confirmStatus?: number;
  confirmDelayMs?: number;
  cancelStatus?: number;
  cancelDelayMs?: number;
  deleteStatus?: number;
  /** Returned on approval; the service applies it only when the user has no organization yet. */
  assignOrganization?: string;
  assignAttributes?: Record<string, string>;
}

export interface RecordedCall {
  method: string;
  path: string;
  authorization?: string;
  body: unknown;
}

export interface AppUserRecord {
  transactionId: string;
  userId: string;
  email: string;
  state: 'pending' | 'confirmed';
  createdAt: number;
}

export interface DownstreamAppOptions {
  apiKey: string;
  behaviour?: Behaviour;
  pendingTtlMs?: number;
}

export interface DownstreamAppState {
  behaviour: Behaviour;
  calls: RecordedCall[];
  /** By transactionId. */
  records: Map<string, AppUserRecord>;
  deletedUsers: string[];
  confirmedUserIds(): string[];
}

export function createDownstreamApp(options: DownstreamAppOptions): {
  app: express.Express;
  state: DownstreamAppState;
  expirePending: (now?: number) => number;
} {
  const ttl = options.pendingTtlMs ?? 3600_000;
  const state: DownstreamAppState = {
    behaviour: options.behaviour ?? {},
    calls: [],
    records: new Map(),
    deletedUsers: [],
    confirmedUserIds: () => [...state.records.values()].filter((r) => r.state === 'confirmed').map((r) => r.userId),
  };

  function expirePending(now = Date.now()): number {
    let expired = 0;
    for (const [id, record] of state.records) {
      if (record.state === 'pending' && now - record.createdAt > ttl) {
        state.records.delete(id);
        expired++;
      }
    }
    return expired;
  }

  const app = express();
  app.use(express.json());
  app.use((req, res, next) => {
    state.calls.push({ method: req.method, path: req.path, authorization: req.get('authorization'), body: req.body });
    if (req.get('authorization') !== `Bearer ${options.apiKey}`)
      return res.status(401).json({ error: 'invalid bearer key' });
    next();
  });

  app.post('/try', async (req, res) => {
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
  });

  app.post('/confirm', async (req, res) => {
    if (state.behaviour.confirmDelayMs) await sleep(state.behaviour.confirmDelayMs);
    if (state.behaviour.confirmStatus && state.behaviour.confirmStatus !== 200)
      return res.status(state.behaviour.confirmStatus).json({ error: 'confirm failed' });
    const record = state.records.get(String((req.body as { transactionId?: unknown } | undefined)?.transactionId));
    if (!record)
      return res.status(404).json({ error: 'no pending record for this transaction (expired or cancelled)' });
    record.state = 'confirmed';
    res.json({ confirmed: true });
  });

  app.post('/cancel', async (req, res) => {
    if (state.behaviour.cancelDelayMs) await sleep(state.behaviour.cancelDelayMs);
    if (state.behaviour.cancelStatus && state.behaviour.cancelStatus !== 200)
      return res.status(state.behaviour.cancelStatus).json({ error: 'cancel failed' });
    const record = state.records.get(String((req.body as { transactionId?: unknown } | undefined)?.transactionId));
    // Cancel only ever removes a pending record; a confirmed user is removed by DELETE /users/{id}.
    if (record?.state === 'pending') state.records.delete(record.transactionId);
    res.json({ cancelled: true });
  });

  app.delete('/users/:userId', (req, res) => {
    if (state.behaviour.deleteStatus && state.behaviour.deleteStatus !== 200)
      return res.status(state.behaviour.deleteStatus).json({ error: 'delete failed' });
    for (const [id, record] of state.records) if (record.userId === req.params.userId) state.records.delete(id);
    state.deletedUsers.push(req.params.userId);
    res.status(204).end();
  });

  return { app, state, expirePending };
}

export interface RunningDownstreamApp {
  url: string;
  state: DownstreamAppState;
  close: () => Promise<void>;
}

export async function startDownstreamApp(
  options: DownstreamAppOptions & { port?: number; host?: string },
): Promise<RunningDownstreamApp> {
  const { app, state, expirePending } = createDownstreamApp(options);
  const host = options.host ?? '127.0.0.1';
  const server = createServer(app);
  await listen(server, options.port ?? 0, host, 'downstream-app', 'PORT');
  const sweeper = setInterval(() => expirePending(), 60_000).unref();
  return {
    url: listeningUrl(server, host),
    state,
    close: () => {
      clearInterval(sweeper);
      return closeServer(server);
    },
  };
}
