import { readFileSync } from 'node:fs';
import net from 'node:net';

/**
 * The first port the system hands out on its own (Linux's ip_local_port_range): to every outgoing connection of every
 * process, and to a listener on port 0. A port chosen below it is not taken by a connection between the moment it is
 * found free and the moment its server binds it; undefined where the range cannot be read.
 */
function ephemeralStart(): number | undefined {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 8192 ? low : undefined;
  } catch {
    return undefined;
  }
}

const bindable = (port: number, host: string): Promise<number | undefined> =>
  new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(undefined));
    server.listen(port, host, () => {
      const bound = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(bound));
    });
  });

/**
 * A port free now, for a server started a moment later (a child process, a test's service): below the ephemeral range
 * when it is known (a few random tries), else one the system gives.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const start = ephemeralStart();
  if (start !== undefined) {
    const low = Math.floor(start / 2);
    for (let tries = 0; tries < 20; tries++) {
      const port = await bindable(low + Math.floor(Math.random() * (start - low)), host);
      if (port !== undefined) return port;
    }
  }
  const given = await bindable(0, host);
  if (given === undefined) throw new Error(`no free port on ${host}`);
  return given;
}
