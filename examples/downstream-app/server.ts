import { startDownstreamApp } from './app';

const apiKey = process.env.API_KEY;
if (!apiKey) {
  console.error('downstream-app: set API_KEY to the key configured as ProvisioningApps:<app>:ApiKey in the service');
  process.exit(1);
}

startDownstreamApp({
  apiKey,
  port: Number(process.env.PORT ?? 7001),
  host: process.env.HOST ?? '127.0.0.1',
  pendingTtlMs: Number(process.env.PENDING_TTL_SECONDS ?? 3600) * 1000,
  behaviour: { rejectWith: process.env.REJECT_REASON },
}).then(
  (app) => console.log(`downstream-app: serving the provisioning protocol on ${app.url}`),
  (error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
