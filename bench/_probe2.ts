import { randomUUID } from 'node:crypto';
import { Client as PgClient } from 'pg';
import { NativeConnection, Worker } from '@temporalio/worker';
import { connectTemporal } from '../api/server';
import { parseConfig } from '../config/load';
import { startDownstreamApp } from '../examples/downstream-app/app';
import { startDevServer } from '../infra/temporal-dev-server';
import { createServiceContext } from '../infra/service-context';
import { createProvisioningActivities } from '../activities/provisioning';
import { freePort } from '../test/support/ports';
import { WORKFLOWS_PATH } from '../workers/create-worker';
import { createUserAndProvision } from '../workflows/provisioning';
(async () => {
  const admin = new PgClient({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' }); await admin.connect();
  const database = `probe_${Date.now()}`; await admin.query(`create database ${database}`);
  const srv = await startDevServer({ port: await freePort() });
  const apps = await Promise.all(['a','b','c'].map(async (id) => ({ id, app: await startDownstreamApp({ apiKey: 'k' }) })));
  const config = parseConfig({ ProvisioningApps: Object.fromEntries(apps.map(({id, app}) => [id, { CallbackUrl: app.url, ApiKey: 'k' }])), Auth: { AllowedInternalTargets: ['127.0.0.1'] } });
  const ctx = await createServiceContext(config, `postgres://postgres@127.0.0.1:5432/${database}`);
  const acts = createProvisioningActivities(ctx) as Record<string, (...a: unknown[]) => Promise<unknown>>;
  const timings: string[] = [];
  const wrapped = Object.fromEntries(Object.entries(acts).map(([k, f]) => [k, async (...a: unknown[]) => { const t = performance.now(); try { return await f(...a); } finally { timings.push(`${k}:${(performance.now()-t).toFixed(1)}@${(performance.now()%10000).toFixed(0)}`); } }]));
  const connection = await NativeConnection.connect({ address: srv.address });
  const worker = await Worker.create({ connection, taskQueue: 'provisioning', activities: wrapped, workflowsPath: WORKFLOWS_PATH });
  const running = worker.run();
  const client = await connectTemporal(config, srv.address);
  for (let i = 0; i < 6; i++) {
    timings.length = 0;
    const t0 = performance.now();
    const email = `p${i}-${randomUUID()}@x.test`;
    const h = await client.workflow.start(createUserAndProvision, { taskQueue: 'provisioning', workflowId: 'probe-' + email, args: [{ trigger: 'admin-api', user: { userId: randomUUID(), email, firstName: null, lastName: null, organizationId: null, customAttributes: {} } }] });
    await h.result();
    console.log(`total ${(performance.now()-t0).toFixed(1)} start@${(t0%10000).toFixed(0)}`, timings.join(' '));
  }
  worker.shutdown(); await running; await srv.stop(); await admin.query(`drop database ${database} with (force)`); await admin.end(); process.exit(0);
})();
