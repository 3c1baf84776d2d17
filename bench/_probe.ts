import { randomUUID } from 'node:crypto';
import { Client as PgClient } from 'pg';
import { connectTemporal } from '../api/server';
import { parseConfig } from '../config/load';
import { startDownstreamApp } from '../examples/downstream-app/app';
import { startDevServer } from '../infra/temporal-dev-server';
import { freePort } from '../test/support/ports';
import { startWorker } from '../workers/worker';
import { createUserAndProvision } from '../workflows/provisioning';
(async () => {
  const admin = new PgClient({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' }); await admin.connect();
  const database = `probe_${Date.now()}`; await admin.query(`create database ${database}`);
  const srv = await startDevServer({ port: await freePort() });
  const apps = await Promise.all(['a','b','c'].map(async (id) => ({ id, app: await startDownstreamApp({ apiKey: 'k' }) })));
  const config = parseConfig({ ProvisioningApps: Object.fromEntries(apps.map(({id, app}) => [id, { CallbackUrl: app.url, ApiKey: 'k' }])), Auth: { AllowedInternalTargets: ['127.0.0.1'] } });
  const worker = await startWorker(config, srv.address, `postgres://postgres@127.0.0.1:5432/${database}`);
  const client = await connectTemporal(config, srv.address);
  for (let i = 0; i < 8; i++) {
    const t0 = performance.now();
    const email = `p${i}-${randomUUID()}@x.test`;
    const h = await client.workflow.start(createUserAndProvision, { taskQueue: 'provisioning', workflowId: 'probe-' + email, args: [{ trigger: 'admin-api', user: { userId: randomUUID(), email, firstName: null, lastName: null, organizationId: null, customAttributes: {} } }] });
    const t1 = performance.now();
    await h.result();
    const t2 = performance.now();
    const hist = await h.fetchHistory();
    const ev = hist.events!.map((e) => `${e.eventType}@${Number(e.eventTime!.nanos!)/1e6|0}`);
    console.log(`start ${(t1-t0).toFixed(1)} result ${(t2-t1).toFixed(1)}`, i === 7 ? ev.join(' ') : '');
  }
  await worker.stop(); await srv.stop(); await admin.query(`drop database ${database} with (force)`); await admin.end(); process.exit(0);
})();
