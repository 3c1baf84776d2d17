import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { Client } from 'pg';
import { startDevServer, type DevServer } from '../../infra/temporal-dev-server';
import { WORKFLOWS_PATH } from '../../workers/create-worker';
import { freePort } from '../../infra/ports';

/** One real Temporal dev server, one fresh PostgreSQL database and one workflow bundle per test run. */
export default async function globalSetup(): Promise<void> {
  const adminUrl = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const database = `ips_test_${process.pid}_${Date.now()}`;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`create database ${database}`);
  await admin.end();
  const testUrl = new URL(adminUrl);
  testUrl.pathname = `/${database}`;

  const [server, bundle] = await Promise.all([
    startDevServer({ port: await freePort(), readyTimeoutMs: 120_000 }),
    bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: { info() {}, warn: console.warn, error: console.error, debug() {}, trace() {}, log() {} } }),
  ]);
  const bundleDir = mkdtempSync(join(tmpdir(), 'ips-bundle-'));
  const bundlePath = join(bundleDir, 'workflow-bundle.js');
  writeFileSync(bundlePath, bundle.code);

  process.env.TEST_TEMPORAL_ADDRESS = server.address;
  process.env.TEST_DATABASE_URL = testUrl.toString();
  process.env.TEST_WORKFLOW_BUNDLE = bundlePath;
  (globalThis as Record<string, unknown>).__testRun = { server, adminUrl, database } satisfies TestRun;
}

export interface TestRun {
  server: DevServer;
  adminUrl: string;
  database: string;
}
