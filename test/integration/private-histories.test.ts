import { randomBytes } from 'node:crypto';
import type { Payload } from '@temporalio/common';
import { startApi, type RunningApi } from '../../api/server';
import type { AppConfig } from '../../platform/config/config-schema';
import { temporalClient } from '../../platform/temporal/data-converter';
import { createKeyRing } from '../../platform/security/data-protection';
import {
  ENCRYPTED_ENCODING,
  KEY_ID_METADATA,
  PayloadEncryptionCodec,
} from '../../platform/security/payload-encryption';
import { deletionWorkflowId, provisioningWorkflowId } from '../../provisioning/workflows/ids';
import { ADMIN_KEY, storedPasswordHash, TEST_PAYLOAD_KEYS, uniqueEmail, useHarness } from '../support/harness';
import { codecOf, historyText, isPayload, payloadValue } from '../support/history';

const h = useHarness({ apps: { crm: {}, billing: {} } });

/** Every payload of a workflow's history, as the server stores it. */
async function storedPayloads(workflowId: string): Promise<Payload[]> {
  const history = await h.client.workflow.getHandle(workflowId).fetchHistory();
  const payloads: Payload[] = [];
  const walk = (value: unknown): void => {
    if (!value || typeof value !== 'object' || value instanceof Uint8Array) return;
    if (isPayload(value)) payloads.push(value);
    else Object.values(value).forEach(walk);
  };
  walk(history);
  return payloads;
}

const wire = (payloads: Payload[]) => ({
  payloads: payloads.map((p) => ({
    metadata: Object.fromEntries(
      Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
    ),
    data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
  })),
});
const fromWire = (body: { payloads: Array<{ data: string; metadata: Record<string, string> }> }) =>
  body.payloads.map((p) => ({
    text: Buffer.from(p.data, 'base64').toString('utf8'),
    metadata: Object.fromEntries(Object.entries(p.metadata).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()])),
  }));

async function codecCall(
  api: { url: string },
  operation: 'encode' | 'decode',
  body: unknown,
  headers: Record<string, string> = {},
) {
  const res = await fetch(`${api.url}/codec/${operation}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-namespace': 'default', ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, headers: res.headers, body: await res.json() };
}

/** Another API on the harness's store and Temporal, with configuration changes. */
async function apiWith(change: (config: AppConfig) => AppConfig): Promise<RunningApi> {
  const config = change(h.config);
  return startApi(config, h.context, temporalClient(h.client.connection, config));
}

// Restructure issue, item 2: the Try and Confirm calls ran folded into the attempt's first step, one event for every
// app and phase, so an operator could not read which app was asked, approved, refused or cancelled, and when.
describe('what an operator reads in a provisioning history', () => {
  test("each app's Try, Confirm and Cancel is an event of its own whose summary names the phase and the app, sealed like every payload", async () => {
    h.apps.billing.state.behaviour = { confirmStatus: 503 };
    const res = await h.admin('POST', '/api/v1/profile/', { email: uniqueEmail('per-app') });
    expect(res.status).toBe(502);
    const history = await h.client.workflow.getHandle(provisioningWorkflowId(res.body.userId as string)).fetchHistory();
    const markers = history.events!.filter(
      (e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
    );
    const summaries = await Promise.all(
      markers.map(async (e) => {
        const summary = e.userMetadata?.summary;
        if (!summary) return undefined;
        expect(Buffer.from(summary.data!).toString()).not.toMatch(/crm|billing/);
        return payloadValue(codecOf(h.config), summary);
      }),
    );
    // The first step (the user and its apps) and the records are store steps, with no app to name.
    expect(summaries).toEqual([
      undefined,
      'Try crm',
      'Try billing',
      'Confirm crm',
      'Confirm billing',
      undefined,
      'Cancel billing',
    ]);
  });
});

describe('workflow histories hold ciphertext only', () => {
  test('a finished provisioning history read straight from the server holds no e-mail, name, custom attribute, hash, app key or failure text; opened with the key it holds them', async () => {
    h.apps.billing.state.behaviour = { confirmStatus: 503, cancelStatus: 500 };
    const email = uniqueEmail('private');
    const password = 'private-passphrase-42';
    const res = await h.admin('POST', '/api/v1/profile/', {
      email,
      password,
      firstName: 'Prudence',
      lastName: 'Privatova',
      customAttributes: { employeeNumber: 'EMP-SECRET-77' },
    });
    // billing refuses Confirm and then Cancel: the attempt ends partially confirmed; the refused Confirm is in the TCC
    // step's result, the failed Cancel an activity failure in the history.
    expect(res.status).toBe(502);
    const userId = res.body.userId as string;
    const workflowId = provisioningWorkflowId(userId);

    const stored = await historyText(h.client, workflowId);
    const hash = (await storedPasswordHash(h, userId))!;
    const appKeys = Object.values(h.config.ProvisioningApps).map((a) => a.ApiKey);
    for (const secret of [email, 'Prudence', 'Privatova', 'EMP-SECRET-77', password, hash, ...appKeys, 'HTTP 50'])
      expect(stored).not.toContain(secret);
    expect(stored).toContain(ENCRYPTED_ENCODING);
    // The failure's own message is a placeholder; the real one travels sealed.
    expect(stored).toContain('Encoded failure');

    const opened = await historyText(h.client, workflowId, codecOf(h.config));
    for (const value of [email, 'Prudence', 'Privatova', 'EMP-SECRET-77', 'HTTP 503', 'HTTP 500'])
      expect(opened).toContain(value);
    for (const secret of [password, hash, ...appKeys]) expect(opened).not.toContain(secret);
  });

  test('the workflow is found by the UserId, ProvisioningTrigger and ProvisioningOutcome search attributes', async () => {
    const res = await h.admin('POST', '/api/v1/profile/', { email: uniqueEmail('findable') });
    expect(res.status).toBe(201);
    const userId = res.body.userId as string;
    expect((await h.admin('DELETE', `/api/v1/profile/${userId}`)).status).toBe(204);
    const found: Array<{ workflowId: string; type: string }> = [];
    for await (const run of h.client.workflow.list({ query: `UserId = '${userId}'` }))
      found.push({ workflowId: run.workflowId, type: run.type });
    expect(found.map((f) => f.workflowId).sort()).toEqual(
      expect.arrayContaining([provisioningWorkflowId(userId), deletionWorkflowId(userId)]),
    );
    const description = await h.client.workflow.getHandle(provisioningWorkflowId(userId)).describe();
    const attributes = description.typedSearchAttributes;
    expect(attributes.getAll().map((pair) => [pair.key.name, pair.value])).toEqual(
      expect.arrayContaining([
        ['UserId', userId],
        ['ProvisioningTrigger', 'admin-api'],
        ['ProvisioningOutcome', 'provisioned'],
      ]),
    );
    const deletion = await h.client.workflow.getHandle(deletionWorkflowId(userId)).describe();
    expect(deletion.typedSearchAttributes.getAll().map((pair) => [pair.key.name, pair.value])).toEqual(
      expect.arrayContaining([['ProvisioningOutcome', 'deleted']]),
    );
  });
});

describe('the codec endpoint (Temporal remote codec protocol)', () => {
  let email: string;
  let payloads: Payload[];

  beforeAll(async () => {
    email = uniqueEmail('codec');
    const res = await h.admin('POST', '/api/v1/profile/', { email, firstName: 'Codec' });
    expect(res.status).toBe(201);
    payloads = await storedPayloads(provisioningWorkflowId(res.body.userId));
  });

  test('decode shows the history as the service wrote it, to an administrator', async () => {
    const decoded = await codecCall(h.api, 'decode', wire(payloads), { authorization: `Bearer ${ADMIN_KEY}` });
    expect(decoded.status).toBe(200);
    const texts = fromWire(decoded.body).map((p) => p.text);
    expect(texts.join('\n')).toContain(email);
    expect(fromWire(decoded.body).every((p) => p.metadata.encoding !== ENCRYPTED_ENCODING)).toBe(true);
    expect(
      wire(payloads)
        .payloads.map((p) => Buffer.from(p.data, 'base64').toString())
        .join('\n'),
    ).not.toContain(email);
  });

  test('encode seals under the first key, and decode opens it again', async () => {
    const plain = {
      payloads: [{ metadata: { encoding: 'anNvbi9wbGFpbg==' }, data: Buffer.from('"hello"').toString('base64') }],
    };
    const admin = { authorization: `Bearer ${ADMIN_KEY}` };
    const sealed = await codecCall(h.api, 'encode', plain, admin);
    expect(sealed.status).toBe(200);
    expect(fromWire(sealed.body)[0].metadata).toEqual({ encoding: ENCRYPTED_ENCODING, [KEY_ID_METADATA]: 'test' });
    const opened = await codecCall(h.api, 'decode', sealed.body, admin);
    expect(fromWire(opened.body)[0]).toEqual({ text: '"hello"', metadata: { encoding: 'json/plain' } });
  });

  test('without the admin credential a caller gets 401, also from loopback, wherever the service is not the embedded default', async () => {
    const refused = await codecCall(h.api, 'decode', wire(payloads));
    expect(refused.status).toBe(401);
    expect(refused.headers.get('content-type')).toContain('application/problem+json');
    expect((await codecCall(h.api, 'decode', wire(payloads), { authorization: 'Bearer wrong' })).status).toBe(401);
  });

  test('open to loopback (the embedded default), a caller forwarded from elsewhere still needs the credential', async () => {
    const api = await apiWith((c) => ({
      ...c,
      Api: { ...c.Api, PublicUrl: 'https://identity.example.test' },
      Temporal: { ...c.Temporal, CodecOpenToLoopback: true },
    }));
    try {
      expect((await codecCall(api, 'decode', wire(payloads))).status).toBe(200);
      // A forwarded request is a proxy passing on a caller from elsewhere, not a loopback caller's own.
      const forwarded = await codecCall(api, 'decode', wire(payloads), { 'x-forwarded-for': '203.0.113.9' });
      expect(forwarded.status).toBe(401);
    } finally {
      await api.close();
    }
  });

  test('CORS: the configured UI origin may call it, others get no CORS answer', async () => {
    const api = await apiWith((c) => ({
      ...c,
      Temporal: { ...c.Temporal, CodecCorsOrigins: ['http://127.0.0.1:8233'] },
    }));
    try {
      const preflight = (origin: string) =>
        fetch(`${api.url}/codec/decode`, {
          method: 'OPTIONS',
          headers: {
            origin,
            'access-control-request-method': 'POST',
            'access-control-request-headers': 'content-type,x-namespace',
          },
        });
      const allowed = await preflight('http://127.0.0.1:8233');
      expect(allowed.status).toBe(204);
      expect(allowed.headers.get('access-control-allow-origin')).toBe('http://127.0.0.1:8233');
      expect(allowed.headers.get('access-control-allow-headers')).toContain('X-Namespace');
      const other = await preflight('http://evil.example.test');
      expect(other.headers.get('access-control-allow-origin')).toBeNull();
    } finally {
      await api.close();
    }
  });

  test('after a key rotation older payloads still open; a payload under a key nobody holds any more is a clear 422', async () => {
    const newer = { Id: 'rotated', Key: randomBytes(32).toString('base64') };
    const rotated = await apiWith((c) => ({
      ...c,
      Temporal: { ...c.Temporal, PayloadKeys: [newer, ...TEST_PAYLOAD_KEYS] },
    }));
    const forgotten = await apiWith((c) => ({ ...c, Temporal: { ...c.Temporal, PayloadKeys: [newer] } }));
    const admin = { authorization: `Bearer ${ADMIN_KEY}` };
    try {
      const opened = await codecCall(rotated, 'decode', wire(payloads), admin);
      expect(opened.status).toBe(200);
      expect(
        fromWire(opened.body)
          .map((p) => p.text)
          .join('\n'),
      ).toContain(email);
      const sealed = await codecCall(rotated, 'encode', { payloads: [{ metadata: {}, data: 'eA==' }] }, admin);
      expect(fromWire(sealed.body)[0].metadata[KEY_ID_METADATA]).toBe('rotated');

      const lost = await codecCall(forgotten, 'decode', wire(payloads), admin);
      expect(lost.status).toBe(422);
      expect(lost.body.detail).toBe('a payload is sealed with payload key test, which is not in Temporal:PayloadKeys');
    } finally {
      await rotated.close();
      await forgotten.close();
    }
  });

  test('payloads written before encryption pass through decode unchanged; a malformed body is a 400', async () => {
    const admin = { authorization: `Bearer ${ADMIN_KEY}` };
    const legacy = {
      payloads: [{ metadata: { encoding: 'anNvbi9wbGFpbg==' }, data: Buffer.from('{"a":1}').toString('base64') }],
    };
    expect((await codecCall(h.api, 'decode', legacy, admin)).body).toEqual(legacy);
    const bad = await codecCall(h.api, 'decode', { payloads: [{ data: 'not base64!' }] }, admin);
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toContain('must be base64');
  });
});

describe('the payload codec', () => {
  test('seals each payload with a fresh nonce and opens it only with its key', async () => {
    const key = randomBytes(32);
    const codec = new PayloadEncryptionCodec(createKeyRing([{ id: 'k1', key }], 'payload key'));
    const payload = { metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from('"same"') };
    const [a, b] = await codec.encode([payload, payload]);
    expect(Buffer.from(a.data!).equals(Buffer.from(b.data!))).toBe(false);
    const [opened] = await codec.decode([a]);
    expect(Buffer.from(opened.data!).toString()).toBe('"same"');
    const other = new PayloadEncryptionCodec(createKeyRing([{ id: 'k1', key: randomBytes(32) }], 'payload key'));
    await expect(other.decode([a])).rejects.toThrow();
  });
});
