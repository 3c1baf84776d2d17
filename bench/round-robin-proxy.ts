import { Agent, createServer, request } from 'node:http';
import { closeServer, listen, listeningUrl } from '../platform/net/listen';

/** A listening proxy: its base URL, how many requests each upstream took, and how to stop it. */
export interface RoundRobinProxy {
  url: string;
  /** Requests handed to each upstream, in the order the upstreams were given. */
  counts: number[];
  /** Requests that could not reach their upstream (answered 502). */
  errors: number;
  close(): Promise<void>;
}

/**
 * The small load balancer in front of several service instances in the benchmarks: each request goes to the next
 * upstream in turn, over kept-alive connections, with its method, path, headers (Host included) and body unchanged, so
 * a flow's steps land on different instances as they would behind a load balancer without session affinity. It does
 * no more than that on purpose: what it measures is the service's instances sharing one store and one Temporal, not
 * the proxy.
 */
export async function startRoundRobinProxy(upstreams: string[]): Promise<RoundRobinProxy> {
  const targets = upstreams.map((upstream) => new URL(upstream));
  // An idle kept-alive socket is dropped after 4 s, before the instances' HTTP servers close theirs (Node's
  // keepAliveTimeout, 5 s): a request sent on a socket the server is closing at that moment fails with "socket hang
  // up". Node's Agent destroys a free socket on its `timeout` event.
  const agent = new Agent({ keepAlive: true, maxSockets: 64, timeout: 4_000 });
  const counts = targets.map(() => 0);
  let next = 0;
  const proxy: RoundRobinProxy = { url: '', counts, errors: 0, close: () => Promise.resolve() };
  const server = createServer((incoming, outgoing) => {
    const index = next++ % targets.length;
    counts[index]++;
    const target = targets[index];
    const forwarded = request(
      {
        agent,
        host: target.hostname,
        port: target.port,
        method: incoming.method,
        path: incoming.url,
        headers: incoming.headers,
      },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.rawHeaders);
        answer.pipe(outgoing);
      },
    );
    forwarded.on('error', (error) => {
      proxy.errors++;
      if (!outgoing.headersSent) outgoing.writeHead(502, { 'content-type': 'text/plain' });
      outgoing.end(`proxy: ${error.message}`);
    });
    incoming.pipe(forwarded);
  });
  server.keepAliveTimeout = 30_000;
  await listen(server, 0, '127.0.0.1', 'Round-robin proxy', 'no setting (it takes a free port)');
  proxy.url = listeningUrl(server, '127.0.0.1');
  proxy.close = async () => {
    await closeServer(server);
    agent.destroy();
  };
  return proxy;
}
