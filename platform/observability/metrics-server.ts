import { createServer } from 'node:http';
import type { AppConfig } from '../config/config-schema';
import { closeServer, listen, listeningUrl } from '../net/listen';
import { logger } from './logger';
import { metricsRegistry } from './metrics';

export interface RunningMetrics {
  url: string;
  close: () => Promise<void>;
}

/**
 * `GET /metrics` in Prometheus' text format on Metrics:Port, apart from the API's port so that a worker running on its
 * own is scraped the same way and the API's admin credential never guards it. Off when Metrics:Port is not set.
 */
export async function startMetricsServer(config: AppConfig, name: string): Promise<RunningMetrics | undefined> {
  const { Port, Host } = config.Metrics;
  if (Port === undefined) return undefined;
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('metrics are at GET /metrics\n');
      return;
    }
    metricsRegistry
      .metrics()
      .then((text) => res.writeHead(200, { 'content-type': metricsRegistry.contentType }).end(text))
      .catch((error: Error) => {
        logger.error({ err: error }, `${name}: collecting metrics failed`);
        res.writeHead(500, { 'content-type': 'text/plain' }).end('collecting metrics failed\n');
      });
  });
  await listen(server, Port, Host, `${name} metrics`, 'Metrics:Port');
  const url = `${listeningUrl(server, Host)}/metrics`;
  logger.info(`${name}: metrics on ${url}`);
  return { url, close: () => closeServer(server) };
}
