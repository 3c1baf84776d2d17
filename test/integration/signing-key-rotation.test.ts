import { randomUUID } from 'node:crypto';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, type JSONWebKeySet } from 'jose';
import { freePort } from '../../dev/ports';
import { createServiceContext, type ServiceContext } from '../../composition/service-context';
import { parseConfig } from '../../platform/config/load';
import { createProvisioningWorker, workerHome } from '../../workers/create-worker';
import {
  ADMIN_KEY,
  serviceProcessEnv,
  stopAfterAll,
  TEST_DATA_PROTECTION_KEY,
  TEST_PAYLOAD_KEYS,
} from '../support/harness';
import { createScratchStore } from '../support/scratch-store';
import { spawnService, waitForOutput, type ServiceProcess } from '../support/service-process';

// Issue 40 part 2: rotation as IdentityServer's KeyManager does it, once per cluster, seen by two API instances of one
// store and one Temporal. Phases of seconds: a key is announced for 6 s, signs until it is 20 s old, is kept 6 s more,
// then retired and deleted; a new one is due when the youngest has 6 s of signing left (at 14 s). Tokens come from
// either instance and are verified with jose against both instances' JWKS, as an API behind either would.
const KEY_MANAGEMENT = {
  RotationInterval: '00:00:20',
  PropagationTime: '00:00:06',
  RetentionDuration: '00:00:06',
  KeyCacheDuration: '00:00:01',
};
const SECOND = 1000;
const SECRET = 'rotation-secret-sixteen';

let store: Awaited<ReturnType<typeof createScratchStore>> | undefined;
let context: ServiceContext | undefined;
let connection: NativeConnection | undefined;
let worker: Worker | undefined;
let running: Promise<void> | undefined;
const instances: { url: string; process: ServiceProcess }[] = [];

beforeAll(async () => {
  store = await createScratchStore('ips_rotation');
  const queue = `test-rotation-${randomUUID()}`;
  const ports = [await freePort(), await freePort()];
  // Both instances stand for one public URL, as behind a load balancer.
  const publicUrl = `http://127.0.0.1:${ports[0]}`;
  for (const port of ports) {
    const env: Record<string, string> = {
      ...serviceProcessEnv(queue),
      DATABASE_URL: store.url,
      PORT: String(port),
      Api__PublicUrl: publicUrl,
    };
    for (const [name, value] of Object.entries(KEY_MANAGEMENT)) env[`KeyManagement__${name}`] = value;
    instances.push({ url: `http://127.0.0.1:${port}`, process: spawnService('api/server.ts', env) });
  }
  // The cluster's one worker (this process): it runs the rotation workflow both instances start.
  const config = parseConfig({
    Temporal: { Address: process.env.TEST_TEMPORAL_ADDRESS, TaskQueue: queue, PayloadKeys: TEST_PAYLOAD_KEYS },
    Database: { Url: store.url },
    DataProtection: { Keys: [{ Id: 'test', Key: TEST_DATA_PROTECTION_KEY }] },
    KeyManagement: KEY_MANAGEMENT,
  });
  context = await createServiceContext(config, store.url);
  connection = await NativeConnection.connect({ address: process.env.TEST_TEMPORAL_ADDRESS! });
  worker = await createProvisioningWorker(
    workerHome(connection, config, { codePath: process.env.TEST_WORKFLOW_BUNDLE! }),
    context,
  );
  running = worker.run();
  await Promise.all(instances.map((i) => waitForOutput(i.process, /api: listening on/, 90_000)));
}, 120_000);

stopAfterAll(() => [
  ...instances.map((i) => i.process),
  worker && {
    stop: async () => {
      worker!.shutdown();
      await running;
    },
  },
  connection,
  context,
  store && { stop: () => store!.drop() },
]);

const keyRows = () =>
  store!.db.selectFrom('signing_keys').select(['id', 'created_at', 'origin']).orderBy('created_at').execute();

async function token(base: string): Promise<string> {
  const answer = await fetch(`${base}/connect/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: 'rotator',
      client_secret: SECRET,
      scope: 'IdentityAdmin',
    }).toString(),
  });
  if (answer.status !== 200) throw new Error(`token: ${answer.status} ${await answer.text()}`);
  return ((await answer.json()) as { access_token: string }).access_token;
}

const jwksOf = async (base: string) =>
  (await (await fetch(`${base}/.well-known/openid-configuration/jwks`)).json()) as JSONWebKeySet;

/** One look: a token from one instance, both instances' JWKS, whether the token verifies against each. */
type Look = { at: number; signer: string; published: string[][]; failures: string[] };

async function look(from: number): Promise<Look> {
  const issued = await token(instances[from].url);
  const sets = await Promise.all(instances.map((i) => jwksOf(i.url)));
  const failures: string[] = [];
  for (const [n, set] of sets.entries()) {
    try {
      await jwtVerify(issued, createLocalJWKSet(set), { typ: 'at+jwt' });
    } catch (error) {
      failures.push(`instance ${n} refused a token of instance ${from}: ${(error as Error).message}`);
    }
  }
  return {
    at: Date.now(),
    signer: decodeProtectedHeader(issued).kid!,
    published: sets.map((s) => s.keys.map((k) => k.kid!)),
    failures,
  };
}

test('two instances start with one key between them, rotate it on time, and no token of either fails at either', async () => {
  const start = await keyRows();
  // Both started on an empty store at once: the advisory lock let one of them make the first key.
  expect(start).toHaveLength(1);
  const [first] = start;
  const answer = await fetch(`${instances[0].url}/api/v1/clients/rotator`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      AllowedGrantTypes: ['client_credentials'],
      AllowedScopes: ['IdentityAdmin'],
      ClientSecrets: [{ Value: SECRET }],
    }),
  });
  expect(answer.status).toBe(201);

  // Until the first key has been retired and its successor's successor made (26 s and 28 s into its life).
  const looks: Look[] = [];
  const until = first.created_at.getTime() + 33 * SECOND;
  for (let n = 0; Date.now() < until; n++) {
    looks.push(await look(n % 2));
    await new Promise((r) => setTimeout(r, 300));
  }
  const rows = await keyRows();

  console.log(
    `signing-key rotation: ${looks.length} tokens from two instances, each verified against both JWKS; keys made ` +
      `${rows.map((r) => `${(r.created_at.getTime() - first.created_at.getTime()) / SECOND} s`).join(' and ')} after the first`,
  );
  expect(looks.flatMap((l) => l.failures)).toEqual([]);
  const [second, third] = rows;
  // The first key is gone from the store, its successors were made on time: when the youngest had 6 s left.
  expect(rows.map((r) => r.id)).not.toContain(first.id);
  expect(rows.every((r) => r.origin === 'generated')).toBe(true);
  expect(rows).toHaveLength(2);
  const made = (key: { created_at: Date }, after: { created_at: Date }) =>
    key.created_at.getTime() - after.created_at.getTime();
  expect(made(second, first)).toBeGreaterThanOrEqual(14 * SECOND);
  expect(made(second, first)).toBeLessThan(19 * SECOND);
  expect(made(third, second)).toBeGreaterThanOrEqual(14 * SECOND);
  expect(made(third, second)).toBeLessThan(19 * SECOND);

  // Announced: the second key was published by both before either signed with it, and it signed only once 6 s old
  const firstSigned = looks.find((l) => l.signer === second.id)!;
  expect(firstSigned).toBeDefined();
  // (Or once the first key expired, if rotation made the second a moment late: Duende's KeyManager then ignores the
  // activation delay rather than sign with an expired key.)
  expect(firstSigned.at).toBeGreaterThanOrEqual(
    Math.min(second.created_at.getTime() + 6 * SECOND, first.created_at.getTime() + 20 * SECOND),
  );
  const announced = looks.filter((l) => l.at < firstSigned.at && l.published.every((p) => p.includes(second.id)));
  expect(announced.length).toBeGreaterThan(0);
  // Signing: the first key signed every token before that, the second every token after (the third only announced).
  const signers = looks.map((l) => l.signer);
  expect([...new Set(signers)]).toEqual([first.id, second.id]);
  // Retained, then retired: the first key stayed published after it stopped signing, then left both JWKS.
  const after = looks.filter((l) => l.at > firstSigned.at);
  expect(after.some((l) => l.published.every((p) => p.includes(first.id)))).toBe(true);
  expect(after.at(-1)!.published.every((p) => !p.includes(first.id) && p.includes(third.id))).toBe(true);
}, 120_000);
