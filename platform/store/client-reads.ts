import pg from 'pg';
import { findClientWithLiveSecrets, type ClientWithLiveSecrets } from './clients';
import { onClientWrites, poolOf, type Db } from './database';

/** The channel schema migration 0032's triggers announce every change to a client or its secrets on. */
export const CLIENT_CHANGES_CHANNEL = 'ips_client_changes';

/** The longest the listener waits before it tries again after losing its connection. */
const MAX_RETRY_MS = 30_000;

export interface ClientReads {
  /** The client with its live secrets, from this process's copy while it is known to be current, else the store. */
  find(clientId: string): Promise<ClientWithLiveSecrets | undefined>;
  /** Whether copies are being kept: the listener is connected and the expiration is not 0. */
  readonly keeping: boolean;
  close(): Promise<void>;
}

export interface ClientReadOptions {
  /** Caching:ClientStoreExpiration: the longest a copy is used, in seconds; 0 reads the store every time. */
  expirationSeconds: number;
  /** Bounds the copies kept: client ids come from requests, but only clients that exist are kept. */
  maxEntries?: number;
  /** Where losing and regaining the change announcements is told. */
  log?: (level: 'info' | 'warn', line: string) => void;
}

/**
 * Duende IdentityServer's client store cache (AddClientStoreCache, Caching:ClientStoreExpiration), without its
 * staleness: every API process keeps the clients it looked up, and drops one as soon as the store announces a change
 * to it or its secrets (schema migration 0032's triggers, whoever wrote: the admin API, a migration pass, an
 * operator's SQL), so a disabled client or a removed secret is refused at the next request on every instance. The
 * expiration only bounds what a lost announcement could cost.
 *
 * - Copies are used only while the listener holds its connection: it starts with none, and each loss or reconnection
 *   forgets every copy, since announcements in between were not heard.
 * - A read that an announcement overtook (the change committed while the read was under way) is not kept.
 * - A copy ends when the first of its secrets expires, so an expired secret is never accepted from it.
 * - This process's own writes forget the copies as they are sent (onClientWrites), not only when the announcement
 *   comes back.
 */
export function clientReads(db: Db, { expirationSeconds, maxEntries = 10_000, log }: ClientReadOptions): ClientReads {
  const expirationMs = expirationSeconds * 1000;
  const entries = new Map<string, { client: ClientWithLiveSecrets; until: number }>();
  // Bumped by every announcement, loss and reconnection: a read that began under another epoch is not kept.
  let epoch = 0;
  let listener: pg.Client | undefined;
  let listening = false;
  let started = false;
  let closed = false;
  let retry: NodeJS.Timeout | undefined;
  let retryMs = 1_000;
  const forgetAll = () => {
    entries.clear();
    epoch++;
  };
  const stopHearingOwnWrites = onClientWrites(db, forgetAll);

  const lost = (client: pg.Client, reason: string) => {
    if (client !== listener) return;
    listener = undefined;
    listening = false;
    forgetAll();
    client.end().catch(() => {});
    if (closed) return;
    log?.(
      'warn',
      `store: client changes are not heard (${reason}); clients are read from the store at every request until they are again, next try in ${retryMs} ms`,
    );
    retry = setTimeout(() => {
      retry = undefined;
      void listen();
    }, retryMs).unref();
    retryMs = Math.min(retryMs * 2, MAX_RETRY_MS);
  };

  async function listen(): Promise<void> {
    const client = new pg.Client(poolOf(db).options);
    listener = client;
    client.on('error', (error: Error) => lost(client, error.message));
    client.on('end', () => lost(client, 'connection ended'));
    client.on('notification', ({ channel, payload }) => {
      if (channel !== CLIENT_CHANGES_CHANNEL) return;
      if (payload === '*' || payload === undefined) forgetAll();
      else {
        entries.delete(payload);
        epoch++;
      }
    });
    try {
      await client.connect();
      await client.query(`listen ${CLIENT_CHANGES_CHANNEL}`);
    } catch (error) {
      return lost(client, (error as Error).message);
    }
    if (client !== listener || closed) return void client.end().catch(() => {});
    if (retryMs > 1_000) log?.('info', 'store: client changes are heard again; clients are kept between requests');
    retryMs = 1_000;
    forgetAll();
    listening = true;
  }

  return {
    get keeping() {
      return listening && expirationMs > 0;
    },
    async find(clientId) {
      if (expirationMs <= 0 || closed) return findClientWithLiveSecrets(db, clientId);
      if (!started) {
        // Only a process that authenticates clients listens (the API; a worker never asks).
        started = true;
        void listen();
      }
      if (!listening) return findClientWithLiveSecrets(db, clientId);
      const hit = entries.get(clientId);
      if (hit && hit.until > Date.now()) return hit.client;
      if (hit) entries.delete(clientId);
      const readAt = epoch;
      const client = await findClientWithLiveSecrets(db, clientId);
      if (client && listening && epoch === readAt) {
        if (entries.size >= maxEntries) entries.delete(entries.keys().next().value!);
        const secretsChange = client.next_secret_expiry?.getTime() ?? Infinity;
        entries.set(clientId, { client, until: Math.min(Date.now() + expirationMs, secretsChange) });
      }
      return client;
    },
    async close() {
      closed = true;
      stopHearingOwnWrites();
      if (retry) clearTimeout(retry);
      const client = listener;
      listener = undefined;
      listening = false;
      entries.clear();
      await client?.end().catch(() => {});
    },
  };
}
