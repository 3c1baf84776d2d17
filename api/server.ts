import type { Server } from 'node:http';
import { Client, Connection } from '@temporalio/client';
import { loadConfig } from '../config/load';
import type { AppConfig } from '../config/schema';
import type { TccClient } from '../activities/provisioning/tcc-client';
import { createServiceContext } from '../infra/service-context';
import type { Db } from '../store/database';
import { required, runMain } from '../infra/process';
import { purgeAbandonedCredentials } from '../store/pending-credentials';
import { createApiApp } from './app';

export interface RunningApi {
  server: Server;
  url: string;
  close(): Promise<void>;
}

export async function startApi(config: AppConfig, { db, http }: { db: Db; http: TccClient }, temporal: Client): Promise<RunningApi> {
  if (config.Auth.AdminApiKeys.length === 0) console.warn('api: Auth:AdminApiKeys is empty, so every admin request is refused');
  await purgeAbandonedCredentials(db);
  const app = createApiApp({ config, db, temporal, http });
  const server = await new Promise<Server>((resolve, reject) => {
    const s = app.listen(config.Api.Port, config.Api.Host, () => resolve(s)).on('error', reject);
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.Api.Port;
  return {
    server,
    url: `http://${config.Api.Host}:${port}`,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

export async function connectTemporal(config: AppConfig, address: string): Promise<Client> {
  const connection = await Connection.connect({ address });
  return new Client({ connection, namespace: config.Temporal.Namespace });
}

if (require.main === module) {
  runMain('api', async () => {
    const config = loadConfig();
    const databaseUrl = required(config.Database.Url, 'the API alone needs DATABASE_URL (or Database:Url); `npm start` runs everything embedded');
    const address = required(config.Temporal.Address, 'the API alone needs TEMPORAL_ADDRESS (or Temporal:Address); `npm start` runs everything embedded');
    const context = await createServiceContext(config, databaseUrl);
    const temporal = await connectTemporal(config, address);
    const api = await startApi(config, context, temporal);
    console.log(`api: listening on ${api.url}`);
    return async () => {
      await api.close();
      await temporal.connection.close();
      await context.close();
    };
  });
}
