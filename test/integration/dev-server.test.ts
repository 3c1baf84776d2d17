import net from 'node:net';
import { Connection } from '@temporalio/client';
import { freePort } from '../../dev/ports';
import { startDevServer } from '../../dev/temporal-dev-server';
import { logger } from '../../platform/observability/logger';

/**
 * Holds a loopback port, so a dev server started on it exits at once, as it does when a port it picked is taken.
 * Connections are dropped as they come: a gRPC client left waiting on one would keep it for later channels too.
 */
async function holdPort(port: number): Promise<net.Server> {
  const holder = net.createServer((socket) => socket.destroy());
  await new Promise<void>((resolve, reject) => holder.once('error', reject).listen(port, '127.0.0.1', resolve));
  return holder;
}

describe('embedded Temporal dev server start-up', () => {
  let warn: jest.SpyInstance;
  beforeEach(() => {
    warn = jest.spyOn(logger, 'warn').mockImplementation(() => {});
  });
  afterEach(() => warn.mockRestore());

  test('a server that exits while starting is started again, and answers once its port is free', async () => {
    const port = await freePort();
    const holder = await holdPort(port);
    warn.mockImplementationOnce(() => holder.close());
    const server = await startDevServer({ port, readyTimeoutMs: 120_000 });
    try {
      expect(warn).toHaveBeenCalledTimes(1);
      expect(warn.mock.calls[0][0]).toMatch(
        /exited with code \d+ while starting; starting it again \(attempt 2 of 3\)/,
      );
      const connection = await Connection.connect({ address: server.address });
      await expect(connection.workflowService.getSystemInfo({})).resolves.toBeDefined();
      await connection.close();
    } finally {
      await server.stop();
    }
  }, 150_000);

  test('after three attempts it gives up with the reason', async () => {
    const port = await freePort();
    const holder = await holdPort(port);
    try {
      await expect(startDevServer({ port, readyTimeoutMs: 60_000 })).rejects.toThrow(
        /temporal server start-dev exited with code \d+/,
      );
      expect(warn).toHaveBeenCalledTimes(2);
    } finally {
      holder.close();
    }
  }, 150_000);
});
