import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { Client, Connection } from '@temporalio/client';
import express from 'express';
import Provider from 'oidc-provider';
import { createScratchDatabase } from '../test/fixtures/source/generate';
import { startApi } from '../api/server';
import { closeServer, listen, listeningUrl } from '../platform/net/listen';
import { createServiceContext } from '../composition/service-context';
import { emailPage, passwordPage } from '../sign-in/oidc/sign-in-pages';
import { hashPassword, verifyPassword } from '../platform/security/password-hashing';
import type { Db } from '../platform/store/database';
import { findSignInUser } from '../sign-in/store/sign-in-users';
import { insertUser } from '../platform/store/users';
import { browser } from '../test/support/sign-in-flow';
import { grantAndFinish } from '../test/support/upstream-provider';
import {
  BENCH_ADMIN_URL,
  benchServiceConfig,
  countStatements,
  loadSamples,
  numberArg,
  runBenchmark,
  runLoad,
  summarize,
  type LoadSamples,
  sha256Secret,
} from './stats';

// The bare provider sends none: every statement counted is the service's.
const { sent, texts } = countStatements(process.argv.includes('--statements'));

/**
 * `npm run bench:signin [-- --flows 200 --concurrency 8 --rounds 4]`: complete authorization-code flows (authorize, e-mail and
 * password forms, code, token with PKCE and a client secret) through the service's provider, and in the same run the
 * same flows against a bare oidc-provider with its in-memory adapter whose sign-in looks the user up in the same
 * store and verifies the same native hash. Users need no provisioning. The two alternate in `--rounds` rounds of
 * `flows / rounds` each (the order reversed every other round), so a machine that slows down or speeds up during the
 * run weighs on both alike. Prints JSON lines.
 */
const PASSWORD = 'a long bench passphrase';
const CLIENT = { id: 'bench', secret: 'bench-client-secret', redirect: 'https://bench.example/cb' };
const USERS = 50;
const emailOf = (i: number) => `bench-${i % USERS}@example.test`;

/** One flow as a browser and a client back end make it; true when the token endpoint answered 200. */
async function codeFlow(base: string, i: number): Promise<boolean> {
  const verifier = randomBytes(32).toString('base64url');
  const authorize = new URL('/connect/authorize', base);
  authorize.search = new URLSearchParams({
    client_id: CLIENT.id,
    response_type: 'code',
    redirect_uri: CLIENT.redirect,
    scope: 'openid profile',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  }).toString();
  const person = browser(CLIENT.redirect);
  await person.open(authorize.href);
  await person.submit('/email', { email: emailOf(i) });
  const back = await person.submit('/password', { password: PASSWORD });
  if (!(back instanceof URL)) return false;
  const token = await fetch(new URL('/connect/token', base), {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: back.searchParams.get('code')!,
      redirect_uri: CLIENT.redirect,
      code_verifier: verifier,
      client_id: CLIENT.id,
      client_secret: CLIENT.secret,
    }).toString(),
  });
  await token.arrayBuffer();
  return token.status === 200;
}

/** The baseline: oidc-provider as its README sets it up, the same two sign-in pages, the same user lookup and hash. */
async function startBareProvider(db: Db) {
  const server = createServer();
  await listen(server, 0, '127.0.0.1', 'bare provider', 'port');
  const issuer = listeningUrl(server, '127.0.0.1');
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: CLIENT.id,
        client_secret: CLIENT.secret,
        redirect_uris: [CLIENT.redirect],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    routes: { authorization: '/connect/authorize', token: '/connect/token' },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    features: { devInteractions: { enabled: false } },
    findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  });
  const app = express();
  const form = express.urlencoded({ extended: false });
  app.get('/interaction/:uid', async (req, res) => {
    const details = await provider.interactionDetails(req, res);
    if (details.prompt.name === 'login')
      return res.type('html').send(emailPage(`/interaction/${details.uid}/email`, CLIENT.id));
    await grantAndFinish(provider, req, res, {
      accountId: details.session!.accountId,
      clientId: CLIENT.id,
      scope: 'openid profile',
    });
  });
  const fields = (req: express.Request) => req.body as Record<string, string | undefined>;
  app.post('/interaction/:uid/email', form, async (req, res) => {
    const details = await provider.interactionDetails(req, res);
    res
      .type('html')
      .send(
        passwordPage(
          `/interaction/${details.uid}/password`,
          String(fields(req).email),
          `/interaction/${details.uid}/restart`,
          '/account/forgot-password',
        ),
      );
  });
  app.post('/interaction/:uid/password', form, async (req, res) => {
    await provider.interactionDetails(req, res);
    const { email = '', password = '' } = fields(req);
    const user = await findSignInUser(db, email);
    if (!user?.password_hash || !(await verifyPassword(password, user.password_hash))) return res.status(400).end();
    await provider.interactionFinished(req, res, { login: { accountId: user.id } }, { mergeWithLastSubmission: false });
  });
  app.use(provider.callback());
  server.on('request', app);
  return { url: issuer, close: () => closeServer(server) };
}

async function main(): Promise<void> {
  const flows = numberArg('flows', 200);
  const concurrency = numberArg('concurrency', 8);
  const rounds = numberArg('rounds', 4);
  const database = await createScratchDatabase(BENCH_ADMIN_URL, 'ips_bench_signin');

  const config = benchServiceConfig([
    {
      ClientId: CLIENT.id,
      ClientSecrets: [{ Value: sha256Secret(CLIENT.secret) }],
      AllowedGrantTypes: ['authorization_code'],
      RedirectUris: [CLIENT.redirect],
      AllowedScopes: ['openid', 'profile'],
    },
  ]);
  const context = await createServiceContext(config, database.url);
  const hash = await hashPassword(PASSWORD);
  // Seeded straight into the store, as a migration leaves users: no workflow runs.
  for (let i = 0; i < USERS; i++)
    await insertUser(
      context.db,
      {
        userId: randomUUID(),
        email: emailOf(i),
        firstName: null,
        lastName: null,
        organizationId: null,
        customAttributes: {},
        emailConfirmed: true,
      },
      hash,
    );
  // No client has provisioning apps, so no flow starts a workflow: the Temporal connection is never opened.
  const temporal = new Client({ connection: Connection.lazy({ address: '127.0.0.1:7233' }) });
  const api = await startApi(config, context, temporal);
  const bare = await startBareProvider(context.db);

  const verifications = 20;
  const t0 = performance.now();
  for (let i = 0; i < verifications; i++) await verifyPassword(PASSWORD, hash);
  const hashMs = Math.round(((performance.now() - t0) / verifications) * 10) / 10;

  await runLoad(Math.min(40, flows), concurrency, (i) => codeFlow(api.url, i));
  await runLoad(Math.min(40, flows), concurrency, (i) => codeFlow(bare.url, i));
  texts?.clear();
  const perRound = Math.ceil(flows / rounds);
  const serviceRuns: LoadSamples[] = [];
  const baselineRuns: LoadSamples[] = [];
  const statements = { service: 0, baseline: 0 };
  for (let round = 0; round < rounds; round++) {
    const variants = [
      { url: api.url, runs: serviceRuns, key: 'service' as const },
      { url: bare.url, runs: baselineRuns, key: 'baseline' as const },
    ];
    for (const variant of round % 2 === 0 ? variants : variants.reverse()) {
      const before = sent.statements;
      variant.runs.push(await loadSamples(perRound, concurrency, (i) => codeFlow(variant.url, i), round * perRound));
      statements[variant.key] += sent.statements - before;
    }
  }
  const service = summarize(serviceRuns);
  const baseline = summarize(baselineRuns);
  const statementsPerFlow = Math.round((statements.service / service.count) * 10) / 10;
  // The bare provider's sign-in reads the user from the same store: one statement per flow.
  const baselineStatementsPerFlow = Math.round((statements.baseline / baseline.count) * 10) / 10;
  if (texts)
    console.log(
      JSON.stringify({
        flows: service.count,
        statements: [...texts]
          .sort((a, b) => b[1] - a[1])
          .map(([text, n]) => [text, Math.round((n / service.count) * 10) / 10]),
      }),
    );

  console.log(
    JSON.stringify({ bench: 'signin', variant: 'service', flows, concurrency, statementsPerFlow, ...service }),
  );
  console.log(
    JSON.stringify({
      bench: 'signin',
      variant: 'bare-oidc-provider-in-memory',
      flows,
      concurrency,
      statementsPerFlow: baselineStatementsPerFlow,
      ...baseline,
    }),
  );
  const ratio = Math.round((baseline.perSecond / service.perSecond) * 100) / 100;
  console.log(
    JSON.stringify({
      bench: 'signin',
      nativeHashVerificationMs: hashMs,
      ratio: { p50: Math.round((service.p50 / baseline.p50) * 100) / 100, costPerFlow: ratio },
      target: { costPerFlow: 1.3, met: ratio <= 1.3 && service.failures === 0 },
    }),
  );

  await bare.close();
  await api.close();
  await context.close();
  await database.drop();
}

runBenchmark(main);
