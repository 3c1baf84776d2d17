// Records workflow histories of the provisioning and migration workflows as the current code runs them, for the
// replay test (test/replay/replay.test.ts). Run it before a change to workflow code, commit what it writes, then change the code:
// runs in flight when a new build rolls out replay the new code against histories like these.
//   npx tsx scripts/record-histories.ts [label]
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import globalSetup from '../test/support/global-setup';
import globalTeardown from '../test/support/global-teardown';
import { startOrAttachMigration, migrationOptions } from '../migration/runner/control';
import { createScratchDatabase, generateSource } from '../test/fixtures/source/generate';
import { startHarness, uniqueEmail, type Harness } from '../test/support/harness';
import { TEST_ADMIN_URL } from '../test/support/scratch-store';
import { codeFlow } from '../test/support/code-flow';
import { relyingParty } from '../test/support/relying-party';
import { closeServer, listen, listeningUrl } from '../platform/net/listen';
import { createServer, type Server } from 'node:http';

const label = process.argv[2] ?? new Date().toISOString().slice(0, 10);
const out = join(__dirname, '..', 'test', 'fixtures', 'histories', label);

async function save(h: Harness, name: string, workflowId: string, runId: string): Promise<void> {
  const history = await h.client.workflow.getHandle(workflowId, runId).fetchHistory();
  // The workflow id goes with the history: workflow code derives child ids from it, and a replay must see the same.
  writeFileSync(join(out, `${name}.json`), JSON.stringify({ workflowId, history }));
  console.log(`record-histories: ${name} (${history.events?.length} events)`);
}

/** Every run on a task queue of the harness, oldest first. */
async function runsOf(
  h: Harness,
  taskQueue: string,
): Promise<Array<{ workflowId: string; runId: string; type: string }>> {
  const runs = [];
  for await (const execution of h.client.workflow.list({ query: `TaskQueue = '${taskQueue}'` })) {
    runs.push({
      workflowId: execution.workflowId,
      runId: execution.runId,
      type: execution.type,
      started: execution.startTime.getTime(),
    });
  }
  return runs.sort((a, b) => a.started - b.started);
}

/** A client with a back-channel logout endpoint (a loopback server answering 200), and one sign-in of the user to it. */
async function signInToLogoutClient(h: Harness, email: string, password: string): Promise<void> {
  const receiver = createServer((_req, res) => res.writeHead(200).end());
  await listen(receiver, 0, '127.0.0.1', 'logout receiver', 'none');
  logoutReceivers.push(receiver);
  const callback = 'https://replay.example.com/callback';
  const client = await h.admin('PUT', '/api/v1/clients/replay-client', {
    AllowedGrantTypes: ['authorization_code'],
    RedirectUris: [callback],
    AllowedScopes: ['openid'],
    ClientSecrets: [{ Value: 'replay-client-secret' }],
    BackChannelLogoutUri: `${listeningUrl(receiver, '127.0.0.1')}/logout`,
  });
  if (client.status !== 201) throw new Error(`the client answered ${client.status}`);
  const flow = codeFlow(callback);
  const rp = await relyingParty(h.api.publicUrl, 'replay-client', 'replay-client-secret');
  const started = await flow.start(rp, 'openid');
  await flow.tokens(rp, started, await flow.signIn(started, email, password));
}
const logoutReceivers: Server[] = [];

async function main(): Promise<void> {
  mkdirSync(out, { recursive: true });
  await globalSetup();
  const source = await createScratchDatabase(TEST_ADMIN_URL, 'ips_source');
  await generateSource(source.url, { users: 30 });
  const h = await startHarness({
    apps: { app1: {}, app2: {} },
    migrationSource: source.url,
    config: { Migration: { PageSize: 10, Version: 'replay' } },
  });
  try {
    const created = await h.admin('POST', '/api/v1/profile/', {
      email: uniqueEmail('replay-created'),
      password: 'a long passphrase',
      customAttributes: { team: 'x' },
    });
    if (created.status !== 201) throw new Error(`creation answered ${created.status}`);
    const userId = created.body.userId as string;
    const duplicate = await h.admin('POST', '/api/v1/profile/', { email: created.body.email });
    if (duplicate.status !== 409) throw new Error(`duplicate answered ${duplicate.status}`);
    // The user signs in to a client that takes back-channel logout tokens, so its deletion tells the client too.
    await signInToLogoutClient(h, created.body.email as string, 'a long passphrase');
    const deleted = await h.admin('DELETE', `/api/v1/profile/${userId}`);
    if (deleted.status !== 204) throw new Error(`deletion answered ${deleted.status}`);

    h.apps.app2.state.behaviour.rejectWith = 'no seats left';
    const rejectedEmail = uniqueEmail('replay-rejected');
    const rejected = await h.admin('POST', '/api/v1/profile/', { email: rejectedEmail, password: 'a long passphrase' });
    if (rejected.status !== 422) throw new Error(`rejection answered ${rejected.status}`);
    h.apps.app2.state.behaviour = { confirmStatus: 500 };
    const partialEmail = uniqueEmail('replay-partial');
    const partial = await h.admin('POST', '/api/v1/profile/', { email: partialEmail });
    if (partial.status !== 502) throw new Error(`partial confirm answered ${partial.status}`);
    h.apps.app2.state.behaviour = {};
    const retried = await h.admin('POST', `/api/v1/profile/${partial.body.userId}/provisioning`);
    if (retried.status !== 200) throw new Error(`retry answered ${retried.status}`);

    // Recorded after the runs so that each background child has finished too.
    await new Promise((r) => setTimeout(r, 1000));
    const migration = await startOrAttachMigration(h.client, h.config, migrationOptions(h.config));
    const report = await migration.result();
    if (report.state !== 'Completed') throw new Error(`migration ended ${report.state}`);
    const runs = [
      ...(await runsOf(h, h.config.Temporal.TaskQueue)),
      ...(await runsOf(h, h.config.Temporal.MigrationTaskQueue)),
    ];
    for (const [index, run] of runs.entries()) {
      await save(h, `${String(index).padStart(2, '0')}-${run.type}`, run.workflowId, run.runId);
    }
  } finally {
    for (const receiver of logoutReceivers) await closeServer(receiver);
    await h.stop();
    await source.drop();
    await globalTeardown();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
