import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import Provider from 'oidc-provider';
import { createScratchDatabase } from '../test/fixtures/source/generate';
import { startApi } from '../api/server';
import { closeServer, listen, listeningUrl } from '../platform/net/listen';
import { createServiceContext, type ServiceContext } from '../composition/service-context';
import type { AppConfig } from '../platform/config/config-schema';
import { parseConfig } from '../platform/config/load';
import { freePort } from '../dev/ports';
import { startDevServer } from '../dev/temporal-dev-server';
import { spawnService, waitForOutput } from '../test/support/service-process';
import { startRoundRobinProxy } from './round-robin-proxy';
import { hashPassword } from '../platform/security/password-hashing';
import { insertUser } from '../platform/store/users';
import { browser } from '../test/support/sign-in-flow';
import { seedApiResource } from '../test/support/api-resources';
import {
  BENCH_ADMIN_URL,
  benchServiceSettings,
  countStatements,
  numberArg,
  percentile,
  runBenchmark,
  sha256Secret,
  type TaskResult,
} from './stats';

/**
 * `npm run bench:tokens [-- --seconds 15 --concurrency 16 --rounds 2]`: the token surface a client and an API use
 * after sign-in — client credentials (JWT access tokens), refresh-token rotation, introspection of reference tokens,
 * userinfo, the JWKS and discovery — through the service and, side by side in the same run, through a bare
 * oidc-provider with an in-memory adapter issuing the same token shapes (RS256, `at+jwt` for the API, opaque for
 * userinfo and introspection, refresh tokens rotated on every use as IdentityServer's OneTimeOnly does). Each endpoint
 * runs for `--seconds` at `--concurrency` on each target, the targets interleaved in `--rounds` rounds. Prints JSON
 * lines: per endpoint and target the requests per second, p50 and p99, and the ratio service / bare.
 * `--instances 2` adds, beside the one instance, two service processes over one database and one Temporal behind a
 * round-robin proxy (bench/round-robin-proxy.ts), with their ratios to the bare provider and to one instance.
 */
const PASSWORD = 'a long bench passphrase';
const API = { id: 'orders-api', secret: 'orders-api-secret-sixteen', scope: 'orders.read' };
const MACHINE = { id: 'machine', secret: 'machine-secret-sixteen' };
const WEB = { id: 'web', secret: 'web-secret-sixteen', redirect: 'https://bench.example/cb' };
const REFERENCE = { id: 'web-reference', secret: 'web-secret-sixteen', redirect: 'https://bench.example/cb' };

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

/** What a target hands the load: its base URL, paths, and per-slot tokens made before the clock starts. */
interface Target {
  name: string;
  url: string;
  jwksPath: string;
  /** Whether it runs in this process, whose statements to PostgreSQL are counted. */
  inProcess: boolean;
  /** Requests the round-robin proxy in front could not hand on (counted as failures of the run). */
  proxyErrors(): number;
  refreshTokens: string[];
  userinfoTokens: string[];
  referenceTokens: string[];
  close(): Promise<void>;
}

type Endpoint = { name: string; call: (target: Target, slot: number) => Promise<TaskResult> };

async function post(url: string, body: string, authorization: string): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization },
    body,
  });
}

const ok = async (answer: Response, check?: (body: Record<string, unknown>) => boolean): Promise<TaskResult> => {
  const body = (await answer.json()) as Record<string, unknown>;
  if (answer.status !== 200) return `${answer.status} ${JSON.stringify(body).slice(0, 200)}`;
  return !check || check(body) ? true : JSON.stringify(body).slice(0, 200);
};

const ENDPOINTS: Endpoint[] = [
  {
    name: 'client-credentials',
    call: async (t) =>
      ok(
        await post(
          `${t.url}/connect/token`,
          form({ grant_type: 'client_credentials', scope: API.scope }),
          basic(MACHINE.id, MACHINE.secret),
        ),
        (b) => typeof b.access_token === 'string' && b.access_token.split('.').length === 3,
      ),
  },
  {
    name: 'refresh-rotation',
    call: async (t, slot) => {
      const answer = await post(
        `${t.url}/connect/token`,
        form({ grant_type: 'refresh_token', refresh_token: t.refreshTokens[slot] }),
        basic(WEB.id, WEB.secret),
      );
      return ok(answer, (b) => {
        if (typeof b.refresh_token !== 'string' || b.refresh_token === t.refreshTokens[slot]) return false;
        t.refreshTokens[slot] = b.refresh_token;
        return true;
      });
    },
  },
  {
    name: 'introspection',
    call: async (t, slot) =>
      ok(
        await post(
          `${t.url}/connect/introspect`,
          form({ token: t.referenceTokens[slot] }),
          t.name.startsWith('service') ? basic(API.id, API.secret) : basic(REFERENCE.id, REFERENCE.secret),
        ),
        (b) => b.active === true,
      ),
  },
  {
    name: 'userinfo',
    call: async (t, slot) =>
      ok(
        await fetch(`${t.url}/connect/userinfo`, { headers: { authorization: `Bearer ${t.userinfoTokens[slot]}` } }),
        (b) => typeof b.sub === 'string',
      ),
  },
  { name: 'jwks', call: async (t) => ok(await fetch(`${t.url}${t.jwksPath}`), (b) => Array.isArray(b.keys)) },
  {
    name: 'discovery',
    call: async (t) => ok(await fetch(`${t.url}/.well-known/openid-configuration`), (b) => b.issuer === t.url),
  },
];

/** One code flow through the service's pages, as a browser and a client back end make it: the token answer. */
async function serviceTokens(base: string, client: typeof WEB, email: string, scope: string) {
  const verifier = randomBytes(32).toString('base64url');
  const authorize = new URL('/connect/authorize', base);
  authorize.search = form({
    client_id: client.id,
    response_type: 'code',
    redirect_uri: client.redirect,
    scope,
    prompt: 'consent',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  });
  const person = browser(client.redirect);
  await person.open(authorize.href);
  await person.submit('/email', { email });
  let back = await person.submit('/password', { password: PASSWORD });
  if (!(back instanceof URL)) back = await person.submit('/consent', {});
  if (!(back instanceof URL)) throw new Error(`no code for ${client.id}: ${back.html.slice(0, 300)}`);
  const answer = await post(
    `${base}/connect/token`,
    form({
      grant_type: 'authorization_code',
      code: back.searchParams.get('code')!,
      redirect_uri: client.redirect,
      code_verifier: verifier,
    }),
    basic(client.id, client.secret),
  );
  const body = (await answer.json()) as Record<string, string>;
  if (answer.status !== 200) throw new Error(`token: ${JSON.stringify(body)}`);
  return body;
}

/** The service's clients, in IdentityServer's appsettings shape. */
function serviceClients(): Array<Record<string, unknown>> {
  const webClient = (client: typeof WEB, extra: Record<string, unknown>) => ({
    ClientId: client.id,
    ClientSecrets: [{ Value: sha256Secret(client.secret) }],
    AllowedGrantTypes: ['authorization_code'],
    RedirectUris: [client.redirect],
    AllowedScopes: ['openid', 'profile', 'offline_access'],
    AllowOfflineAccess: true,
    RequireConsent: false,
    ...extra,
  });
  return [
    {
      ClientId: MACHINE.id,
      ClientSecrets: [{ Value: sha256Secret(MACHINE.secret) }],
      AllowedGrantTypes: ['client_credentials'],
      AllowedScopes: [API.scope],
    },
    webClient(WEB, {}),
    webClient(REFERENCE, { AccessTokenType: 1, AllowedScopes: ['openid', 'profile', API.scope] }),
  ];
}

/** Where the service answers (its public URL) and how to stop it. */
interface Deployment {
  url: string;
  /** Requests the proxy in front could not hand to an instance (none in front: 0). */
  proxyErrors(): number;
  close(): Promise<void>;
}

/** One instance in this process, as the figures before two instances were taken. */
async function inProcess(config: AppConfig, context: ServiceContext): Promise<Deployment> {
  // No client has provisioning apps, so no flow starts a workflow: the Temporal connection is never opened.
  const temporal = new Client({ connection: Connection.lazy({ address: '127.0.0.1:7233' }) });
  const api = await startApi(config, context, temporal);
  return { url: api.publicUrl, proxyErrors: () => 0, close: () => api.close() };
}

/**
 * `instances` API processes (`api/server.ts`, as `npm run api` runs it) over one database and one Temporal dev
 * server, with the same settings, behind the round-robin proxy whose URL is their public URL (the issuer): every
 * step of a flow, and every request of the load, goes to the next instance in turn.
 */
async function behindProxy(settings: object, databaseUrl: string, instances: number): Promise<Deployment> {
  const temporal = await startDevServer({ port: await freePort(), readyTimeoutMs: 120_000 });
  const ports = await Promise.all(Array.from({ length: instances }, () => freePort()));
  const proxy = await startRoundRobinProxy(ports.map((port) => `http://127.0.0.1:${port}`));
  const file = join(mkdtempSync(join(tmpdir(), 'ips-bench-tokens-')), 'appsettings.json');
  writeFileSync(file, JSON.stringify(settings));
  const processes = ports.map((port) =>
    spawnService('api/server.ts', {
      APPSETTINGS: file,
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: temporal.address,
      PORT: String(port),
      Api__PublicUrl: proxy.url,
      LOG_FORMAT: 'json',
    }),
  );
  const close = async () => {
    await Promise.all(processes.map((p) => p.stop()));
    await proxy.close();
    await temporal.stop();
  };
  try {
    await Promise.all(processes.map((p) => waitForOutput(p, /api: listening on/, 120_000)));
  } catch (error) {
    await close();
    throw error;
  }
  return { url: proxy.url, proxyErrors: () => proxy.errors, close };
}

/**
 * The service (every artefact in PostgreSQL) with one instance in this process, or `instances` processes behind the
 * proxy; its tokens come from real code flows through its pages.
 */
async function startService(slots: number, instances: number): Promise<Target> {
  const database = await createScratchDatabase(BENCH_ADMIN_URL, 'ips_bench_tokens');
  const settings = benchServiceSettings(serviceClients());
  const config = parseConfig(settings);
  const context = await createServiceContext(config, database.url);
  // Before the instances start: each reads the API resources when it builds its provider.
  await seedApiResource(context.db, API);
  const hash = await hashPassword(PASSWORD);
  const deployment =
    instances === 1 ? await inProcess(config, context) : await behindProxy(settings, database.url, instances);
  const target: Target = {
    name: instances === 1 ? 'service' : `service-${instances}-instances`,
    url: deployment.url,
    jwksPath: '/.well-known/openid-configuration/jwks',
    inProcess: instances === 1,
    proxyErrors: () => deployment.proxyErrors(),
    refreshTokens: [],
    userinfoTokens: [],
    referenceTokens: [],
    close: async () => {
      await deployment.close();
      await context.close();
      await database.drop();
    },
  };
  for (let slot = 0; slot < slots; slot++) {
    const email = `bench-tokens-${slot}@example.test`;
    await insertUser(
      context.db,
      {
        userId: randomUUID(),
        email,
        firstName: 'Bench',
        lastName: `User ${slot}`,
        organizationId: null,
        customAttributes: {},
        emailConfirmed: true,
      },
      hash,
    );
    const web = await serviceTokens(deployment.url, WEB, email, 'openid profile offline_access');
    target.refreshTokens.push(web.refresh_token);
    target.userinfoTokens.push(web.access_token);
    target.referenceTokens.push(
      (await serviceTokens(deployment.url, REFERENCE, email, `openid ${API.scope}`)).access_token,
    );
  }
  return target;
}

/**
 * oidc-provider's own in-memory adapter keeps at most 1,000 artefacts (an LRU) and would forget the baseline's tokens
 * under load; this one is the same maps without the bound.
 */
class MapAdapter {
  private static store = new Map<string, Record<string, unknown>>();
  private static grants = new Map<string, Set<string>>();
  constructor(private model: string) {}
  private key = (id: string) => `${this.model}:${id}`;
  upsert(id: string, payload: Record<string, unknown>) {
    MapAdapter.store.set(this.key(id), payload);
    const grantId = payload.grantId as string | undefined;
    if (grantId) MapAdapter.grants.set(grantId, (MapAdapter.grants.get(grantId) ?? new Set()).add(this.key(id)));
    return Promise.resolve();
  }
  find(id: string) {
    return Promise.resolve(MapAdapter.store.get(this.key(id)));
  }
  findByUid(uid: string) {
    return Promise.resolve([...MapAdapter.store.values()].find((p) => p.uid === uid));
  }
  findByUserCode(code: string) {
    return Promise.resolve([...MapAdapter.store.values()].find((p) => p.userCode === code));
  }
  consume(id: string) {
    const payload = MapAdapter.store.get(this.key(id));
    if (payload) payload.consumed = Math.floor(Date.now() / 1000);
    return Promise.resolve();
  }
  destroy(id: string) {
    MapAdapter.store.delete(this.key(id));
    return Promise.resolve();
  }
  revokeByGrantId(grantId: string) {
    for (const key of MapAdapter.grants.get(grantId) ?? []) MapAdapter.store.delete(key);
    MapAdapter.grants.delete(grantId);
    return Promise.resolve();
  }
}

/**
 * The baseline: oidc-provider as its README sets it up, in-memory, with the same clients, RS256, JWT access tokens for
 * the API (resource indicators) and opaque ones for userinfo. Its tokens are minted directly (not timed): only the
 * endpoints are measured.
 */
async function startBare(slots: number): Promise<Target> {
  const server = createServer();
  await listen(server, 0, '127.0.0.1', 'bare provider', 'port');
  const issuer = listeningUrl(server, '127.0.0.1');
  const resource = `urn:bench:${API.id}`;
  const provider = new Provider(issuer, {
    adapter: MapAdapter,
    clients: [
      {
        client_id: MACHINE.id,
        client_secret: MACHINE.secret,
        grant_types: ['client_credentials'],
        redirect_uris: [],
        response_types: [],
      },
      ...[WEB, REFERENCE].map((c) => ({
        client_id: c.id,
        client_secret: c.secret,
        grant_types: ['authorization_code', 'refresh_token'],
        redirect_uris: [c.redirect],
      })),
    ],
    routes: { token: '/connect/token', userinfo: '/connect/userinfo', introspection: '/connect/introspect' },
    scopes: ['openid', 'profile', 'offline_access', API.scope],
    claims: { profile: ['name', 'family_name', 'given_name'] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: (ctx) => (ctx.oidc.client?.clientId === MACHINE.id ? resource : undefined),
        getResourceServerInfo: () => ({
          scope: API.scope,
          audience: API.id,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
        useGrantedResource: () => true,
      },
    },
    rotateRefreshToken: true,
    findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub, given_name: 'Bench', family_name: 'User' }) }),
  });
  const handle = provider.callback();
  server.on('request', (req, res) => void handle(req, res));
  const target: Target = {
    name: 'bare-oidc-provider-in-memory',
    url: issuer,
    jwksPath: '/jwks',
    inProcess: true,
    proxyErrors: () => 0,
    refreshTokens: [],
    userinfoTokens: [],
    referenceTokens: [],
    close: () => closeServer(server),
  };
  const web = await provider.Client.find(WEB.id);
  for (let slot = 0; slot < slots; slot++) {
    const accountId = randomUUID();
    // One grant per token kind: a rotation ends the access tokens of its grant (oidc-provider revokes them with it).
    const minted = async (Kind: typeof provider.RefreshToken | typeof provider.AccessToken) => {
      const grant = new provider.Grant({ accountId, clientId: WEB.id });
      grant.addOIDCScope('openid profile offline_access');
      const grantId = await grant.save();
      const scope = 'openid profile offline_access';
      return new Kind({ accountId, client: web!, grantId, scope, gty: 'authorization_code' }).save();
    };
    target.refreshTokens.push(await minted(provider.RefreshToken));
    target.userinfoTokens.push(await minted(provider.AccessToken));
    target.referenceTokens.push(await minted(provider.AccessToken));
  }
  return target;
}

const { sent, texts } = countStatements(process.argv.includes('--statements'));

/** Calls `endpoint` for `seconds` with `concurrency` in flight, each slot reusing its own tokens. */
async function loadFor(target: Target, endpoint: Endpoint, seconds: number, concurrency: number) {
  const latencies: number[] = [];
  const reasons = new Set<string>();
  let failures = 0;
  texts?.clear();
  const before = { ...sent };
  const started = performance.now();
  const end = started + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, slot) => {
      while (performance.now() < end) {
        const t0 = performance.now();
        const result = await endpoint.call(target, slot).catch((error: Error) => error.message);
        latencies.push(performance.now() - t0);
        if (result !== true) {
          failures++;
          if (typeof result === 'string' && reasons.size < 3) reasons.add(result);
        }
      }
    }),
  );
  if (texts && texts.size > 0)
    console.log(JSON.stringify({ endpoint: endpoint.name, requests: latencies.length, statements: [...texts] }));
  return {
    latencies,
    seconds: (performance.now() - started) / 1000,
    failures,
    reasons,
    statements: sent.statements - before.statements,
    transactions: sent.transactions - before.transactions,
  };
}

async function main(): Promise<void> {
  const seconds = numberArg('seconds', 15);
  const concurrency = numberArg('concurrency', 16);
  const rounds = numberArg('rounds', 2);
  const instances = numberArg('instances', 1);
  const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : undefined;
  const targets = [await startService(concurrency, 1)];
  if (instances > 1) targets.push(await startService(concurrency, instances));
  targets.push(await startBare(concurrency));
  const endpoints = ENDPOINTS.filter((e) => !only || e.name === only);
  type Sample = Omit<Awaited<ReturnType<typeof loadFor>>, 'reasons'> & { reasons: Set<string> };
  const samples = new Map<string, Sample>();
  for (const endpoint of endpoints)
    for (const target of targets) await loadFor(target, endpoint, Math.min(2, seconds), concurrency); // warm-up
  for (let round = 0; round < rounds; round++)
    for (const endpoint of endpoints)
      for (const target of round % 2 === 0 ? targets : [...targets].reverse()) {
        const run = await loadFor(target, endpoint, seconds, concurrency);
        const key = `${endpoint.name}|${target.name}`;
        const sum = samples.get(key) ?? {
          latencies: [],
          seconds: 0,
          failures: 0,
          reasons: new Set<string>(),
          statements: 0,
          transactions: 0,
        };
        sum.latencies.push(...run.latencies);
        sum.seconds += run.seconds;
        sum.failures += run.failures;
        sum.statements += run.statements;
        sum.transactions += run.transactions;
        run.reasons.forEach((r) => sum.reasons.add(r));
        samples.set(key, sum);
      }
  const round1 = (n: number) => Math.round(n * 10) / 10;
  for (const endpoint of endpoints) {
    const results = targets.map((target) => {
      const s = samples.get(`${endpoint.name}|${target.name}`)!;
      const sorted = s.latencies.sort((a, b) => a - b);
      const result = {
        bench: 'tokens',
        endpoint: endpoint.name,
        variant: target.name,
        concurrency,
        perSecond: round1(sorted.length / s.seconds),
        p50: round1(percentile(sorted, 50)),
        p99: round1(percentile(sorted, 99)),
        failures: s.failures,
        ...(target.inProcess
          ? {
              statementsPerRequest: round1(s.statements / sorted.length),
              transactionsPerRequest: round1(s.transactions / sorted.length),
            }
          : {}),
        ...(s.reasons.size > 0 ? { failureReasons: [...s.reasons] } : {}),
      };
      console.log(JSON.stringify(result));
      return result;
    });
    const bare = results.at(-1)!;
    const ratioOf = (a: number, b: number) => Math.round((a / b) * 100) / 100;
    for (const service of results.slice(0, -1)) {
      const ratio = ratioOf(service.perSecond, bare.perSecond);
      console.log(
        JSON.stringify({
          bench: 'tokens',
          endpoint: endpoint.name,
          variant: service.variant,
          ratio: {
            throughput: ratio,
            p50: round1(service.p50 / bare.p50),
            ...(service !== results[0] ? { toOneInstance: ratioOf(service.perSecond, results[0].perSecond) } : {}),
          },
          target: { throughput: 0.7, met: ratio >= 0.7 && service.failures === 0 },
        }),
      );
    }
  }
  // A request the proxy fails during a measured run is a failure of that run; these include the warm-up's.
  for (const target of targets)
    if (target.proxyErrors() > 0)
      console.log(JSON.stringify({ bench: 'tokens', variant: target.name, proxyErrors: target.proxyErrors() }));
  for (const target of targets) await target.close();
}

runBenchmark(main);
