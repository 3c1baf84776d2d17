import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { freePort } from '../../dev/ports';
import { startDevServer, type DevServer } from '../../dev/temporal-dev-server';
import { createScratchDatabase } from '../fixtures/source/generate';
import { WORKFLOW_CODE } from '../../workers/create-worker';
import { TEST_ADMIN_URL } from './scratch-store';

export interface TestRun {
  server: DevServer;
  dropDatabase(): Promise<void>;
}

/** One real Temporal dev server, one fresh PostgreSQL database and one workflow bundle per test run. */
export default async function globalSetup(): Promise<void> {
  const database = await createScratchDatabase(TEST_ADMIN_URL, 'ips_test');
  const [server, bundle] = await Promise.all([
    startDevServer({ port: await freePort(), readyTimeoutMs: 120_000 }),
    bundleWorkflowCode({
      ...WORKFLOW_CODE,
      logger: { info() {}, warn: console.warn, error: console.error, debug() {}, trace() {}, log() {} },
    }),
  ]);
  const bundlePath = join(mkdtempSync(join(tmpdir(), 'ips-bundle-')), 'workflow-bundle.js');
  writeFileSync(bundlePath, bundle.code);

  process.env.TEST_TEMPORAL_ADDRESS = server.address;
  process.env.TEST_DATABASE_URL = database.url;
  process.env.TEST_WORKFLOW_BUNDLE = bundlePath;
  (globalThis as Record<string, unknown>).__testRun = { server, dropDatabase: () => database.drop() } satisfies TestRun;
}
