import express from 'express';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { createLogger } from '../../platform/observability/logger';
import { requestObservability } from '../../platform/observability/http';

// Issue 42: the access line is written without the redaction pass (its fields are the service's own); every other line
// of the request's logger is still redacted.
test('one access line with the request id, method, route template, status and duration; the request logger redacts', async () => {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({
    destination: new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(
          ...chunk
            .toString()
            .trim()
            .split('\n')
            .map((l) => JSON.parse(l) as Record<string, unknown>),
        );
        done();
      },
    }),
  });
  const app = express();
  app.use(requestObservability(log, () => '/things/:id'));
  app.get('/things/:id', (req, res) => {
    req.log.warn({ password: 'sekrit-1', headers: { authorization: 'Bearer sekrit-2' } }, 'inside');
    res.status(201).end();
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  try {
    const { port } = server.address() as AddressInfo;
    expect(
      (await fetch(`http://127.0.0.1:${port}/things/42?token=sekrit-3`, { headers: { 'x-request-id': 'r-1' } })).status,
    ).toBe(201);
    await new Promise((resolve) => setImmediate(resolve));
  } finally {
    server.close();
  }
  expect(JSON.stringify(lines)).not.toMatch(/sekrit/);
  expect(lines).toEqual([
    expect.objectContaining({ reqId: 'r-1', password: '[Redacted]', headers: { authorization: '[Redacted]' } }),
    expect.objectContaining({
      level: 30,
      reqId: 'r-1',
      method: 'GET',
      route: '/things/:id',
      status: 201,
      msg: 'GET /things/:id 201',
    }),
  ]);
  expect(typeof lines[1].durationMs).toBe('number');
});
