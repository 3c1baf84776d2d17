import {
  Kysely,
  Migrator,
  PostgresDialect,
  sql,
  type KyselyPlugin,
  type Migration,
  type MigrationProvider,
} from 'kysely';
import { Pool, type PoolClient } from 'pg';
import * as usersAndProvisions from './schema-migrations/0001_users_and_provisions';
import * as scimAndApps from './schema-migrations/0002_scim_and_apps';
import * as migrationTargets from './schema-migrations/0003_migration_targets';
import * as migrationBulkWrites from './schema-migrations/0004_migration_bulk_writes';
import * as protectedAppKeys from './schema-migrations/0005_protected_app_keys';
import * as creationGuards from './schema-migrations/0006_creation_guards';
import * as signIn from './schema-migrations/0007_sign_in';
import * as federation from './schema-migrations/0008_federation';
import * as scimEmails from './schema-migrations/0009_scim_emails';
import * as userRemovals from './schema-migrations/0010_user_removals';
import * as revokedAccessTokens from './schema-migrations/0011_revoked_access_tokens';
import * as accountRecovery from './schema-migrations/0012_account_recovery';
import * as signOutNotices from './schema-migrations/0013_sign_out_notices';
import * as stockRefreshTokens from './schema-migrations/0014_stock_refresh_tokens';
import * as readThroughGuards from './schema-migrations/0016_read_through_guards';
import * as accountBudgets from './schema-migrations/0017_account_budgets';
import * as signInRound3 from './schema-migrations/0018_sign_in_round_3';
import * as scimAsSent from './schema-migrations/0020_scim_as_sent';
import * as keyManagement from './schema-migrations/0021_key_management';
import * as sourceSessions from './schema-migrations/0024_source_sessions';
import * as accountPage from './schema-migrations/0027_account_page';
import * as readThroughTallies from './schema-migrations/0029_read_through_tallies';
import * as budgetsInOneRoundTrip from './schema-migrations/0031_budgets_in_one_round_trip';
import * as clientChanges from './schema-migrations/0032_client_changes';
import type { Database } from './schema';
import { logger } from '../observability/logger';
import { shuttingDown } from '../observability/shutdown';

export type Db = Kysely<Database>;

const pools = new WeakMap<Db, Pool>();

/** How long a lost connection's log line waits to learn whether the process is stopping. */
const LOSS_VERDICT_DELAY_MS = 500;

/**
 * A lost connection fails the query it carried, never the process, and never the next query. pg's pool listens for
 * errors of idle clients only; a client that loses its connection while checked out (the server restarted, an
 * administrator terminated it) emits `error` with nobody listening, and Node exits: every client gets a listener of
 * its own. The server's FATAL answer fails the query in flight before the socket closes, so the client would go back
 * to the pool looking healthy and fail the next query too: a client whose query met a FATAL error or a dead socket is
 * ended when it is released, and the pool opens a fresh connection instead.
 */
export function survivesLostConnections(pool: Pool, name: string): Pool {
  const broken = new WeakMap<PoolClient, string>();
  // Ctrl-C reaches the embedded PostgreSQL and this process at once, and the server's goodbye may be read before the
  // signal is: whether the loss came from a stop is decided a moment later.
  const lost = (message: string) =>
    setTimeout(() => logger[shuttingDown() ? 'debug' : 'warn'](message), LOSS_VERDICT_DELAY_MS).unref();
  pool.on('error', (error) => lost(`${name}: idle database connection lost: ${error.message}`));
  pool.on('connect', (client) => {
    client.on('error', (error) => lost(`${name}: database connection lost: ${error.message}`));
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    client.query = function (...args: unknown[]) {
      const result = query(...args) as Promise<unknown> | undefined;
      // Promises of another realm (jest's sandbox) fail instanceof; anything with catch() is one.
      if (typeof result?.catch === 'function') {
        result.catch((error: { severity?: string; message?: string }) => {
          if (error?.severity === 'FATAL' || /Connection terminated|ECONNRESET|EPIPE/.test(error?.message ?? ''))
            broken.set(client, error.message ?? 'unknown error');
        });
      }
      return result;
    } as typeof client.query;
  });
  pool.on('release', (_error, client) => {
    const reason = broken.get(client);
    if (reason === undefined) return;
    lost(`${name}: database connection lost (${reason}); the next query opens a new one`);
    client.end().catch(() => {});
  });
  return pool;
}

/** The tables whose rows the API processes keep copies of (platform/store/client-reads.ts). */
const CLIENT_TABLES = new Set(['clients', 'client_secrets']);
const WRITES = new Set(['InsertQueryNode', 'UpdateQueryNode', 'DeleteQueryNode']);

/** The names of the tables a query node names anywhere (its target, its joins, its subqueries). */
function tablesIn(node: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(node)) for (const item of node) tablesIn(item, found);
  else if (node && typeof node === 'object') {
    const { kind, table } = node as { kind?: string; table?: { identifier?: { name?: string } } };
    if (kind === 'TableNode' && table?.identifier?.name) found.add(table.identifier.name);
    for (const value of Object.values(node)) if (value && typeof value === 'object') tablesIn(value, found);
  }
  return found;
}

const clientWriteHooks = new WeakMap<Db, Set<() => void>>();

/**
 * Calls `hook` when this process writes to the clients or their secrets through `db`, as the write is sent. Other
 * processes hear of it when it commits (ips_client_changes); this one knows at once, so a request after the write
 * never meets the copy from before it.
 */
export function onClientWrites(db: Db, hook: () => void): () => void {
  const hooks = clientWriteHooks.get(db);
  hooks?.add(hook);
  return () => hooks?.delete(hook);
}

function clientWritesPlugin(hooks: Set<() => void>): KyselyPlugin {
  return {
    transformQuery({ node }) {
      if (hooks.size > 0 && WRITES.has(node.kind) && [...tablesIn(node)].some((t) => CLIENT_TABLES.has(t)))
        for (const hook of hooks) hook();
      return node;
    },
    transformResult: ({ result }) => Promise.resolve(result),
  };
}

export function createDb(connectionString: string, poolSize = 10): Db {
  const pool = survivesLostConnections(new Pool({ connectionString, max: poolSize }), 'store');
  const hooks = new Set<() => void>();
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), plugins: [clientWritesPlugin(hooks)] });
  pools.set(db, pool);
  clientWriteHooks.set(db, hooks);
  return db;
}

/** The connection pool under a store, for what kysely does not speak: COPY (see copyUnlessAnyExists). */
export function poolOf(db: Db): Pool {
  const pool = pools.get(db);
  if (!pool) throw new Error('store: this database handle was not made by createDb');
  return pool;
}

/** Migrations are compiled in, so a bundled or containerised service needs no migration folder on disk. */
const provider: MigrationProvider = {
  getMigrations: (): Promise<Record<string, Migration>> =>
    Promise.resolve({
      '0001_users_and_provisions': usersAndProvisions,
      '0002_scim_and_apps': scimAndApps,
      '0003_migration_targets': migrationTargets,
      '0004_migration_bulk_writes': migrationBulkWrites,
      '0005_protected_app_keys': protectedAppKeys,
      '0006_creation_guards': creationGuards,
      '0007_sign_in': signIn,
      '0008_federation': federation,
      '0009_scim_emails': scimEmails,
      '0010_user_removals': userRemovals,
      '0011_revoked_access_tokens': revokedAccessTokens,
      '0012_account_recovery': accountRecovery,
      '0013_sign_out_notices': signOutNotices,
      '0014_stock_refresh_tokens': stockRefreshTokens,
      '0016_read_through_guards': readThroughGuards,
      '0017_account_budgets': accountBudgets,
      '0018_sign_in_round_3': signInRound3,
      '0020_scim_as_sent': scimAsSent,
      '0021_key_management': keyManagement,
      '0024_source_sessions': sourceSessions,
      '0027_account_page': accountPage,
      '0029_read_through_tallies': readThroughTallies,
      '0031_budgets_in_one_round_trip': budgetsInOneRoundTrip,
      '0032_client_changes': clientChanges,
    }),
};

export async function migrateToLatest(db: Db): Promise<void> {
  // Schema migrations written side by side land in any order: one numbered below another already run still runs
  // (each creates only its own tables and columns).
  const { error, results } = await new Migrator({ db, provider, allowUnorderedMigrations: true }).migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    throw new Error(
      `store migration ${failed?.migrationName ?? ''} failed: ${(error as Error | undefined)?.message ?? 'unknown error'}`,
    );
  }
}

/** One round trip to the store: the health probe's question whether it answers. */
export async function pingStore(db: Db): Promise<void> {
  await sql`select 1`.execute(db);
}
