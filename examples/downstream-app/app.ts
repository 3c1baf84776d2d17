import { createServer } from 'node:http';
import express from 'express';
import { closeServer, listen, listeningUrl } from '../../platform/net/listen';
import { answerCancel, answerConfirm, answerDelete, answerTry } from './handlers';
import { createState, expirePending, type DownstreamAppOptions, type DownstreamAppState } from './state';

export type { AppUserRecord, Behaviour, DownstreamAppOptions, DownstreamAppState, RecordedCall } from './state';

/**
 * A reference downstream app: the other side of the provisioning protocol.
 * Try stores a pending record keyed by transactionId, Confirm promotes it, Cancel drops it,
 * and pending records that nobody confirmed expire after a TTL.
 */
export function createDownstreamApp(options: DownstreamAppOptions): {
  app: express.Express;
  state: DownstreamAppState;
  expirePending: (now?: number) => number;
} {
  const ttl = options.pendingTtlMs ?? 3600_000;
  const state = createState(options.behaviour);
  const app = express();
  app.use(express.json());
  app.use((req, res, next) => {
    state.calls.push({ method: req.method, path: req.path, authorization: req.get('authorization'), body: req.body });
    if (req.get('authorization') !== `Bearer ${options.apiKey}`)
      return res.status(401).json({ error: 'invalid bearer key' });
    next();
  });
  app.post('/try', (req, res) => answerTry(state, req, res));
  app.post('/confirm', (req, res) => answerConfirm(state, req, res));
  app.post('/cancel', (req, res) => answerCancel(state, req, res));
  app.delete('/users/:userId', (req, res) => answerDelete(state, req, res));
  return { app, state, expirePending: (now?: number) => expirePending(state, ttl, now) };
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
