import net from 'node:net';
import { createServer, type Server } from 'node:http';
import { ConfigError } from '../config/load';

/**
 * Binds a server and resolves only once it holds the port. A port another process holds stops start-up with a
 * message naming the port and the setting to change (Express 5's app.listen hands the bind error to its callback,
 * which had been taken for "listening").
 */
export function listen(server: Server, port: number, host: string, name: string, setting: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      if (error.code === 'EADDRINUSE') {
        reject(
          new ConfigError(
            `${name}: port ${port} on ${host} is already in use by another process; stop that process or set ${setting} to a free port`,
          ),
        );
      } else if (error.code === 'EACCES') {
        reject(
          new ConfigError(
            `${name}: not allowed to listen on port ${port} on ${host} (ports below 1024 need privileges); set ${setting} to another port`,
          ),
        );
      } else if (error.code === 'EADDRNOTAVAIL') {
        reject(
          new ConfigError(`${name}: ${host} is not an address of this machine; set the bind address to one of its own`),
        );
      } else {
        reject(error);
      }
    };
    const onListening = () => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });
}

/** `http://host:port` of a listening server; a wildcard bind address is reached through 127.0.0.1. */
export function listeningUrl(server: Server, host: string): string {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const reachable = host === '0.0.0.0' || host === '::' || host === '' ? '127.0.0.1' : host;
  return `http://${net.isIPv6(reachable) ? `[${reachable}]` : reachable}:${port}`;
}

/** Stops accepting connections and drops the open ones (keep-alive clients would otherwise hold the close). */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/**
 * Stops start-up, naming the port and the setting, when another process already listens on a port a server of ours
 * (the embedded PostgreSQL, the Temporal dev server) is about to take: such a server may fail later with words that
 * do not say so, or, worse, the one already there may answer in its place.
 */
export async function assertPortFree(port: number, host: string, name: string, setting: string): Promise<void> {
  const probe = createServer();
  await listen(probe, port, host, name, setting);
  await closeServer(probe);
}
