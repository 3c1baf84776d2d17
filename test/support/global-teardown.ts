import { Client } from 'pg';
import type { TestRun } from './global-setup';

export default async function globalTeardown(): Promise<void> {
  const run = (globalThis as Record<string, unknown>).__testRun as TestRun | undefined;
  if (!run) return;
  await run.server.stop();
  const admin = new Client({ connectionString: run.adminUrl });
  await admin.connect();
  await admin.query(`drop database if exists ${run.database} with (force)`);
  await admin.end();
}
