import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startDownstreamApp, type RunningDownstreamApp } from '../../examples/downstream-app/app';
import { ADMIN_KEY, standaloneServiceEnv, uniqueEmail } from '../support/harness';
import { spawnService, waitForOutput, type ServiceProcess } from '../support/service-process';

// What the image runs: the TypeScript compiled by `npm run build` (tsc, then the prebuilt workflow bundle), started by
// plain node, without tsx. The build goes to a folder of its own inside the project so node_modules resolves.
const ROOT = join(__dirname, '..', '..');
const OUT = join(ROOT, '.build-test', 'dist');
const run = promisify(execFile);
const APP_KEY = `app-key-${randomUUID()}`;
let app: RunningDownstreamApp;
let api: ServiceProcess;
let worker: ServiceProcess;

beforeAll(async () => {
  rmSync(OUT, { recursive: true, force: true });
  const tsc = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
  await run(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', OUT], { cwd: ROOT });
  await run(process.execPath, [join(OUT, 'scripts', 'build-workflow-bundle.js')], { cwd: ROOT });
  app = await startDownstreamApp({ apiKey: APP_KEY });
  const env = { ...standaloneServiceEnv(app.url, APP_KEY), NODE_ENV: 'production' };
  const plainNode = { loader: 'none' as const };
  worker = spawnService(join(OUT, 'workers', 'worker.js'), env, ['--disable-proto=throw'], [], plainNode);
  api = spawnService(join(OUT, 'api', 'server.js'), { ...env, PORT: '0' }, ['--disable-proto=throw'], [], plainNode);
  await waitForOutput(worker, /worker: polling task queues/, 60_000);
}, 180_000);

afterAll(async () => {
  await api?.stop();
  await worker?.stop();
  await app?.close();
  rmSync(join(ROOT, '.build-test'), { recursive: true, force: true });
});

test('npm run build compiles every entry point and writes the workflow bundle the worker loads', () => {
  for (const entry of ['api/server.js', 'workers/worker.js', 'cli/migrate.js', 'cli/start.js', 'workflow-bundle.js'])
    expect(existsSync(join(OUT, entry))).toBe(true);
});

test('the compiled API and worker, under plain node, create and provision a user', async () => {
  const url = (await waitForOutput(api, /api: listening on (http:\/\/\S+?)[ "]/))[1];
  const res = await fetch(`${url}/api/v1/profile/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_KEY}` },
    body: JSON.stringify({ email: uniqueEmail('compiled') }),
  });
  expect(res.status).toBe(201);
  expect(((await res.json()) as { provisionedApps: string[] }).provisionedApps).toEqual(['crm']);
  expect((await fetch(`${url}/docs/assets/swagger-ui.css`)).status).toBe(200);
  // The worker bundled nothing at start: it loaded the prebuilt bundle.
  expect(worker.output()).not.toMatch(/Workflow bundle created/);
}, 60_000);
