import { Writable } from 'node:stream';
import { freePort } from '../../dev/ports';
import { createLogger } from '../../platform/observability/logger';
import { WORKER_HEAP_LIMIT_MB } from '../../workers/heap-limit';
import { ADMIN_KEY, uniqueEmail, useStandaloneService } from '../support/harness';
import { spawnService, waitForOutput, type ServiceProcess } from '../support/service-process';

// The API and the worker as operators run them (`npm run api`, `npm run worker`): separate processes, each with its
// own /metrics, JSON log lines on standard output (not a terminal), the Temporal SDK's metrics on a second port.
let apiUrl: string;
const ports = { api: 0, worker: 0, temporal: 0 };

const service = useStandaloneService(async (env) => {
  // The metrics servers take a port the system gives them (0) and say which: a port picked here and bound later could
  // be taken meanwhile by another test file's process or connection. The SDK's exporter needs a port named up front.
  ports.temporal = await freePort();
  // With the heap limit, as `npm run worker` starts it; at debug, where the SDK's own lines (its worker states) show.
  const worker = spawnService(
    'workers/worker.ts',
    { ...env, LOG_LEVEL: 'debug', Metrics__Port: '0', Metrics__TemporalPort: String(ports.temporal) },
    [`--max-old-space-size=${WORKER_HEAP_LIMIT_MB}`],
  );
  const api = spawnService('api/server.ts', { ...env, PORT: '0', Metrics__Port: '0' });
  apiUrl = (await waitForOutput(api, /api: listening on (http:\/\/\S+?)[ "]/))[1];
  ports.api = Number((await waitForOutput(api, /api: metrics on http:\/\/127\.0\.0\.1:(\d+)\/metrics/))[1]);
  await waitForOutput(worker, /worker: polling task queues/);
  ports.worker = Number((await waitForOutput(worker, /worker: metrics on http:\/\/127\.0\.0\.1:(\d+)\/metrics/))[1]);
  return { api, worker };
});

/** The JSON lines a process printed, parsed. */
const lines = (process_: ServiceProcess) =>
  process_
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);

const scrape = async (port: number) => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();

describe('a provisioning request through separate API and worker processes', () => {
  const email = uniqueEmail('ops');
  let created: Response;

  beforeAll(async () => {
    created = await fetch(`${apiUrl}/api/v1/profile/`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        authorization: `Bearer ${ADMIN_KEY}`,
        'x-request-id': 'ops-req-1',
      },
      body: JSON.stringify({ email, firstName: 'Opal', password: 'a long enough password' }),
    });
  }, 60_000);

  test('the request id the caller sent comes back, and one JSON access line carries it with the route template', async () => {
    expect(created.status).toBe(201);
    expect(created.headers.get('x-request-id')).toBe('ops-req-1');
    // The line is written when the answer has been sent, which may be after the client has read it.
    await waitForOutput(service.api, /"reqId":"ops-req-1"/);
    const access = lines(service.api).filter((line) => line.reqId === 'ops-req-1');
    expect(access).toEqual([
      expect.objectContaining({
        level: 30,
        msg: 'POST /api/v1/profile 201',
        method: 'POST',
        route: '/api/v1/profile',
        status: 201,
        durationMs: expect.any(Number),
      }),
    ]);
  });

  test('a malformed or missing X-Request-Id is replaced by one the service makes', async () => {
    const res = await fetch(`${apiUrl}/healthz`, { headers: { 'x-request-id': 'no spaces or <tags> allowed' } });
    const id = res.headers.get('x-request-id');
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    await waitForOutput(service.api, new RegExp(`"reqId":"${id}"`));
  });

  test('no log line of either process holds the e-mail, the password, the admin key or the app key', () => {
    for (const output of [service.api.output(), service.worker.output()]) {
      for (const secret of [email, 'a long enough password', ADMIN_KEY, service.appKey])
        expect(output).not.toContain(secret);
    }
  });

  test("the API's /metrics counts the request by route and status and the attempt by trigger and outcome", async () => {
    const text = await scrape(ports.api);
    expect(text).toMatch(/^http_requests_total\{method="POST",route="\/api\/v1\/profile",status="201"\} 1$/m);
    expect(text).toMatch(
      /^http_request_duration_seconds_count\{method="POST",route="\/api\/v1\/profile",status="201"\} 1$/m,
    );
    expect(text).toMatch(/^provisioning_attempts_total\{trigger="admin-api",outcome="provisioned"\} 1$/m);
    expect(text).toMatch(/^process_cpu_seconds_total /m);
    expect(text).not.toContain(email);
  });

  test("the worker's /metrics counts each call to the app by phase and outcome, with its latency", async () => {
    const text = await scrape(ports.worker);
    expect(text).toMatch(/^tcc_calls_total\{app="crm",phase="try",outcome="approved"\} 1$/m);
    expect(text).toMatch(/^tcc_calls_total\{app="crm",phase="confirm",outcome="ok"\} 1$/m);
    expect(text).toMatch(/^tcc_call_duration_seconds_count\{app="crm",phase="try",outcome="approved"\} 1$/m);
    expect(text).not.toContain(email);
  });

  test("the Temporal SDK's own worker metrics are served on Metrics:TemporalPort", async () => {
    const text = await scrape(ports.temporal);
    expect(text).toMatch(/^temporal_workflow_completed\{.*task_queue="test-process-/m);
  });
});

test('start-up lists the configured apps by id and host (never the key), every URL served and the heap limit', () => {
  const host = new URL(service.app.url).host;
  for (const output of [service.api.output(), service.worker.output()])
    expect(output).toContain(`provisioning apps: crm (${host})`);
  expect(service.api.output()).toContain(`API reference ${apiUrl}/docs, OpenAPI document ${apiUrl}/openapi.json`);
  // Each process named its metrics URL (the set-up read the ports from those lines); the scrapes above use them.
  expect(service.worker.output()).toContain(`temporal: worker metrics on http://127.0.0.1:${ports.temporal}/metrics`);
  // The limit as V8 reports it: ours plus the young generation.
  const heap = lines(service.worker).find((line) => String(line.msg).startsWith('worker: V8 heap limit'));
  expect(heap).toMatchObject({ level: 30 });
  expect(Number(/(\d+) MB/.exec(String(heap?.msg))?.[1])).toBeGreaterThanOrEqual(WORKER_HEAP_LIMIT_MB);
});

test('the Temporal SDK logs through the same JSON logger', () => {
  expect(lines(service.worker).some((line) => line.sdk === 'temporal')).toBe(true);
});

test('secret-bearing fields are redacted wherever they sit in a logged object', () => {
  let written = '';
  const logger = createLogger({
    destination: new Writable({
      write(chunk: Buffer, _encoding, done) {
        written += chunk.toString();
        done();
      },
    }),
  });
  logger.warn(
    {
      headers: { authorization: 'Bearer sekrit-1', cookie: 'sid=sekrit-2' },
      app: { ApiKey: 'sekrit-3', CallbackUrl: 'https://crm.example.com' },
      password: 'sekrit-4',
      user: { profile: { password_hash: 'sekrit-5' } },
      token: 'sekrit-6',
      source: { ConnectionString: 'Server=db;Password=sekrit-7' },
      client: { client_secret: 'sekrit-8' },
    },
    'redaction',
  );
  expect(written).not.toMatch(/sekrit/);
  expect(JSON.parse(written)).toMatchObject({
    headers: { authorization: '[Redacted]', cookie: '[Redacted]' },
    app: { ApiKey: '[Redacted]', CallbackUrl: 'https://crm.example.com' },
    user: { profile: { password_hash: '[Redacted]' } },
  });
});
