import type { TestRun } from './global-setup';

export default async function globalTeardown(): Promise<void> {
  const run = (globalThis as Record<string, unknown>).__testRun as TestRun | undefined;
  if (!run) return;
  await run.server.stop();
  await run.dropDatabase();
}
