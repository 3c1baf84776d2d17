import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { createTccClient, type TccClient } from '../../provisioning/apps/tcc-client';
import { parseAllowList } from '../../platform/security/callback-address';

/**
 * An app closes an idle kept-alive connection when it likes (Node's default: after 5 s), and a call the service sends
 * on it at that moment meets a reset before any answer. Every TCC call may be repeated (the app treats a repeat of a
 * transactionId as the same call), so such a call is sent once more on a new connection; a reset on a new connection
 * is the app's answer, and stays a failure.
 */
let server: Server;
let client: TccClient;
let received: Array<{ path: string; transactionId: string }>;
/** Which request on its connection the app drops without answering: the 2nd (a reused connection) or the 1st. */
let dropNth: number;
const seenOn = new WeakMap<Socket, number>();

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res) => {
    const nth = (seenOn.get(req.socket) ?? 0) + 1;
    seenOn.set(req.socket, nth);
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      received.push({ path: req.url!, transactionId: (JSON.parse(body) as { transactionId: string }).transactionId });
      if (nth === dropNth) return req.socket.destroy();
      res.setHeader('content-type', 'application/json');
      res.end(req.url === '/try' ? '{"approved":true}' : '{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  client?.close();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  client?.close();
  client = createTccClient(parseAllowList(['127.0.0.1']));
  received = [];
});

const app = () => ({
  appId: 'resetting',
  callbackUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
  apiKey: 'k',
  tryTimeoutSeconds: 5,
});
const user = (transactionId: string) => ({ transactionId, userId: 'u', email: 'e@example.test' });

test('a Try whose kept-alive connection is reset before any answer is sent again on a new one, and approved', async () => {
  dropNth = 2;
  expect(await client.try(app(), user('t1'))).toEqual({ approved: true });
  expect(await client.try(app(), user('t2'))).toEqual({ approved: true });
  expect(received).toEqual([
    { path: '/try', transactionId: 't1' },
    { path: '/try', transactionId: 't2' },
    { path: '/try', transactionId: 't2' },
  ]);
});

test('when every kept-alive connection in the pool was closed, the call goes through them to a new one', async () => {
  dropNth = 2;
  await Promise.all(['a', 'b', 'c'].map((t) => client.try(app(), user(t))));
  received = [];
  expect(await client.try(app(), user('t4'))).toEqual({ approved: true });
  expect(received.map((r) => r.transactionId)).toEqual(['t4', 't4', 't4', 't4']);
});

test('a Confirm likewise', async () => {
  dropNth = 2;
  await client.confirm(app(), 't1');
  await client.confirm(app(), 't2');
  expect(received.map((r) => r.transactionId)).toEqual(['t1', 't2', 't2']);
});

test('a reset on a new connection is the answer: the Try fails once, not sent again', async () => {
  dropNth = 1;
  expect(await client.try(app(), user('t3'))).toEqual({
    approved: false,
    reason: expect.stringMatching(/socket hang up|ECONNRESET/) as string,
  });
  expect(received).toEqual([{ path: '/try', transactionId: 't3' }]);
});
