import { execFile } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ADMIN_KEY, uniqueEmail, useStandaloneService } from '../support/harness';
import { spawnService, waitForOutput } from '../support/service-process';

// What the image runs: the TypeScript compiled by `npm run build` (tsc, then the prebuilt workflow bundle), started by
// plain node, without tsx. The build goes to a folder of its own inside the project so node_modules resolves.
const ROOT = join(__dirname, '..', '..');
const OUT = join(ROOT, '.build-test', 'dist');
const run = promisify(execFile);

beforeAll(async () => {
  rmSync(OUT, { recursive: true, force: true });
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  await run(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', OUT], { cwd: ROOT });
  await run(process.execPath, [join(OUT, 'scripts', 'build-workflow-bundle.js')], { cwd: ROOT });
}, 180_000);

const service = useStandaloneService(async (standalone) => {
  const env = { ...standalone, NODE_ENV: 'production' };
  const plainNode = { loader: 'none' as const };
  // At debug level, where the SDK's bundler would report a bundle made at start.
  const worker = spawnService(
    join(OUT, 'workers', 'worker.js'),
    { ...env, LOG_LEVEL: 'debug' },
    ['--disable-proto=throw'],
    [],
    plainNode,
  );
  const api = spawnService(
    join(OUT, 'api', 'server.js'),
    { ...env, PORT: '0' },
    ['--disable-proto=throw'],
    [],
    plainNode,
  );
  await waitForOutput(worker, /worker: polling task queues/, 60_000);
  return { api, worker };
}, 120_000);
afterAll(() => rmSync(join(ROOT, '.build-test'), { recursive: true, force: true }));

test('npm run build compiles every entry point and writes the workflow bundle the worker loads', () => {
  for (const entry of ['api/server.js', 'workers/worker.js', 'cli/migrate.js', 'cli/start.js', 'workflow-bundle.js'])
    expect(existsSync(join(OUT, entry))).toBe(true);
});

test('the compiled API and worker, under plain node, create and provision a user', async () => {
  const url = (await waitForOutput(service.api, /api: listening on (http:\/\/\S+?)[ "]/))[1];
  const res = await fetch(`${url}/api/v1/profile/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_KEY}` },
    body: JSON.stringify({ email: uniqueEmail('compiled') }),
  });
  expect(res.status).toBe(201);
  expect(((await res.json()) as { provisionedApps: string[] }).provisionedApps).toEqual(['crm']);
  expect((await fetch(`${url}/docs/assets/swagger-ui.css`)).status).toBe(200);
  // The worker bundled nothing at start: it loaded the prebuilt bundle.
  expect(service.worker.output()).not.toMatch(/Workflow bundle created/);
}, 60_000);
