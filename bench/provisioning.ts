import { randomBytes, randomUUID } from 'node:crypto';
import { createScratchDatabase } from '../test/fixtures/source/generate';
import { startApi } from '../api/server';
import { parseConfig } from '../config/load';
import { startDownstreamApp } from '../examples/downstream-app/app';
import { startDevServer } from '../dev/temporal-dev-server';
import { freePort } from '../dev/ports';
import { startWorker } from '../workers/worker';
import { BENCH_ADMIN_URL, numberArg, runBenchmark, runLoad } from './stats';

/**
 * `npm run bench:provisioning [-- --users 500 --concurrency 16]`: user creations through the HTTP API
 * (API + worker in this process, as `npm start` runs them) against three loopback apps that approve at once,
 * and, in the same run, the same Try/Confirm calls made directly without Temporal. Prints JSON lines.
 */
async function main(): Promise<void> {
  const users = numberArg('users', 500);
  const concurrency = numberArg('concurrency', 16);
  const database = await createScratchDatabase(BENCH_ADMIN_URL, 'ips_bench');

  const temporalServer = await startDevServer({ port: await freePort(), readyTimeoutMs: 120_000 });
  const apps = await Promise.all(
    ['crm', 'billing', 'wiki'].map(async (id) => ({
      id,
      key: `bench-${id}`,
      app: await startDownstreamApp({ apiKey: `bench-${id}` }),
    })),
  );
  const config = parseConfig({
    ProvisioningApps: Object.fromEntries(apps.map(({ id, key, app }) => [id, { CallbackUrl: app.url, ApiKey: key }])),
    Auth: { AllowedInternalTargets: ['127.0.0.1'], AdminApiKeys: ['bench-admin'] },
    Api: { Port: 0 },
    Temporal: { PayloadKeys: [{ Id: 'bench', Key: randomBytes(32).toString('base64') }] },
  });
  const worker = await startWorker(config, temporalServer.address, database.url);
  const api = await startApi(config, worker.context, worker.client);

  const create = async (i: number) => {
    const res = await fetch(`${api.url}/api/v1/profile/`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer bench-admin' },
      body: JSON.stringify({ email: `bench-${i}-${randomUUID().slice(0, 8)}@example.test`, firstName: 'Bench' }),
    });
    await res.arrayBuffer();
    return res.status === 201;
  };

  const appList = await worker.context.apps.listApps({ userId: 'bench', organizationId: null });
  const direct = async () => {
    const transactionId = randomUUID();
    const user = {
      transactionId,
      userId: randomUUID(),
      email: `direct-${transactionId}@example.test`,
      firstName: 'Bench',
    };
    for (const app of appList) if (!(await worker.context.http.try(app, user)).approved) return false;
    for (const app of appList) await worker.context.http.confirm(app, transactionId);
    return true;
  };

  await runLoad(Math.min(50, users), concurrency, create);
  await runLoad(Math.min(50, users), concurrency, direct);
  const service = await runLoad(users, concurrency, create);
  const baseline = await runLoad(users, concurrency, direct);

  console.log(JSON.stringify({ bench: 'provisioning', variant: 'http-api-temporal', users, concurrency, ...service }));
  console.log(
    JSON.stringify({ bench: 'provisioning', variant: 'baseline-direct-tcc-calls', users, concurrency, ...baseline }),
  );
  console.log(
    JSON.stringify({
      bench: 'provisioning',
      ratio: {
        p50: Math.round((service.p50 / baseline.p50) * 10) / 10,
        throughput: Math.round((baseline.perSecond / service.perSecond) * 10) / 10,
      },
      targets: {
        p50Ms: 60,
        perSecond: 100,
        met: service.p50 <= 60 && service.perSecond >= 100 && service.failures === 0,
      },
    }),
  );

  await api.close();
  await worker.stop();
  await Promise.all(apps.map(({ app }) => app.close()));
  await temporalServer.stop();
  await database.drop();
}

runBenchmark(main);
