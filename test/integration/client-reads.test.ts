import { sql } from 'kysely';
import { clientReads, type ClientReads } from '../../platform/store/client-reads';
import { createDb, poolOf, type Db } from '../../platform/store/database';
import { eventually } from '../support/harness';
import { storedClientRow } from '../support/client-rows';
import { createScratchStore } from '../support/scratch-store';

// Issue 42: the clients an API process authenticates are kept between requests (Duende's client store cache), and a
// change to a client or its secrets, made by this process or another, is refused at once rather than after an
// expiration. Two handles on one database stand for two API processes.

let store: Awaited<ReturnType<typeof createScratchStore>>;
/** The other process: its writes reach this one only through the store's announcements. */
let other: Db;
const opened: ClientReads[] = [];

beforeAll(async () => {
  store = await createScratchStore('ips_client_reads');
  other = createDb(store.url, 2);
}, 60_000);
afterAll(async () => {
  await Promise.all(opened.map((reads) => reads.close()));
  await other?.destroy();
  await store?.drop();
});

/** Reads through a new keeper, counting the connections it checks out of the pool: one per store read. */
function keeper(expirationSeconds = 300) {
  const reads = clientReads(store.db, { expirationSeconds });
  opened.push(reads);
  let storeReads = 0;
  poolOf(store.db).on('acquire', () => storeReads++);
  return { reads, storeReads: () => storeReads };
}

async function addClient(clientId: string, secrets: Array<{ value: string; expiration?: Date }> = []) {
  await other
    .insertInto('clients')
    .values(storedClientRow(clientId, { grant_types: JSON.stringify(['client_credentials']) }))
    .execute();
  for (const [i, secret] of secrets.entries())
    await other
      .insertInto('client_secrets')
      .values({
        id: `${clientId}-${i}`,
        client_id: clientId,
        value: secret.value,
        description: null,
        expiration: secret.expiration ?? null,
      })
      .execute();
}

/** Reads until the keeper's listener is connected (it starts at the first read). */
async function keeping(reads: ClientReads, clientId: string) {
  await reads.find(clientId);
  await eventually(() => expect(reads.keeping).toBe(true), 5_000);
}

test('a kept client is answered without the store, and another process disabling it is heard at once', async () => {
  await addClient('kept', [{ value: 'SHA256$a' }]);
  const { reads, storeReads } = keeper();
  await keeping(reads, 'kept');
  await reads.find('kept');
  const before = storeReads();
  for (let i = 0; i < 20; i++) expect((await reads.find('kept'))?.live_secrets).toEqual(['SHA256$a']);
  expect(storeReads()).toBe(before);

  await other.updateTable('clients').set({ enabled: false }).where('client_id', '=', 'kept').execute();
  const heardAt = Date.now();
  await eventually(async () => expect((await reads.find('kept'))?.enabled).toBe(false), 2_000);
  // An announcement on loopback takes milliseconds; the bound leaves room for a loaded machine.
  expect(Date.now() - heardAt).toBeLessThan(1_000);

  // A secret removed elsewhere, and one added, likewise.
  await other.updateTable('clients').set({ enabled: true }).where('client_id', '=', 'kept').execute();
  await other.deleteFrom('client_secrets').where('client_id', '=', 'kept').execute();
  await eventually(async () => expect((await reads.find('kept'))?.live_secrets).toEqual([]), 2_000);
  await other
    .insertInto('client_secrets')
    .values({ id: 'kept-new', client_id: 'kept', value: 'SHA256$b', description: null, expiration: null })
    .execute();
  await eventually(async () => expect((await reads.find('kept'))?.live_secrets).toEqual(['SHA256$b']), 2_000);
  // Deleted outright, and the table emptied: gone at the next read.
  await other.deleteFrom('clients').where('client_id', '=', 'kept').execute();
  await eventually(async () => expect(await reads.find('kept')).toBeUndefined(), 2_000);
});

test("this process's own write is seen by the very next read, before the announcement comes back", async () => {
  await addClient('own', [{ value: 'SHA256$own' }]);
  const { reads } = keeper();
  await keeping(reads, 'own');
  expect((await reads.find('own'))?.enabled).toBe(true);
  for (let i = 0; i < 20; i++) {
    const enabled = i % 2 === 1;
    await store.db.updateTable('clients').set({ enabled }).where('client_id', '=', 'own').execute();
    expect((await reads.find('own'))?.enabled).toBe(enabled);
  }
});

test('a copy ends when the first of its secrets expires: an expired secret is never accepted from it', async () => {
  await addClient('expiring', [
    { value: 'SHA256$short', expiration: new Date(Date.now() + 1_500) },
    { value: 'SHA256$long' },
  ]);
  const { reads } = keeper();
  await keeping(reads, 'expiring');
  expect((await reads.find('expiring'))?.live_secrets.sort()).toEqual(['SHA256$long', 'SHA256$short']);
  await eventually(async () => expect((await reads.find('expiring'))?.live_secrets).toEqual(['SHA256$long']), 5_000);
});

test('while the announcements are not heard, every read goes to the store; once heard again, copies are kept', async () => {
  await addClient('outage', [{ value: 'SHA256$x' }]);
  const { reads, storeReads } = keeper();
  await keeping(reads, 'outage');
  await reads.find('outage');

  // An administrator ends the listener's connection (or the network drops it).
  const ended = await sql<{ ended: boolean }>`
    select pg_terminate_backend(pid) as ended from pg_stat_activity
    where datname = current_database() and query = 'listen ips_client_changes'`.execute(store.db);
  expect(ended.rows.length).toBeGreaterThan(0);
  await eventually(() => expect(reads.keeping).toBe(false), 5_000);

  // A change made meanwhile is seen although no announcement reached this process, and nothing is kept.
  await other.updateTable('clients').set({ enabled: false }).where('client_id', '=', 'outage').execute();
  const before = storeReads();
  expect((await reads.find('outage'))?.enabled).toBe(false);
  expect((await reads.find('outage'))?.enabled).toBe(false);
  if (!reads.keeping) expect(storeReads()).toBe(before + 2);

  // The listener comes back by itself; copies are kept again, and announcements heard.
  await eventually(() => expect(reads.keeping).toBe(true), 10_000);
  await reads.find('outage');
  const after = storeReads();
  await reads.find('outage');
  expect(storeReads()).toBe(after);
  await other.updateTable('clients').set({ enabled: true }).where('client_id', '=', 'outage').execute();
  await eventually(async () => expect((await reads.find('outage'))?.enabled).toBe(true), 2_000);
}, 30_000);

test('Caching:ClientStoreExpiration 0 keeps nothing; unknown client ids are never kept', async () => {
  await addClient('uncached');
  const { reads, storeReads } = keeper(0);
  const before = storeReads();
  await reads.find('uncached');
  await reads.find('uncached');
  expect(storeReads()).toBe(before + 2);
  expect(reads.keeping).toBe(false);

  const kept = keeper();
  await keeping(kept.reads, 'uncached');
  const unknown = kept.storeReads();
  expect(await kept.reads.find('no-such-client')).toBeUndefined();
  expect(await kept.reads.find('no-such-client')).toBeUndefined();
  expect(kept.storeReads()).toBe(unknown + 2);
});
