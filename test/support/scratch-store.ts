import { createScratchDatabase, generateSource } from '../fixtures/source/generate';
import type { Kysely } from 'kysely';
import { Client as PgClient } from 'pg';
import type { MigrationOptions } from '../../migration/activities/types';
import { connectSource } from '../../migration/source/connection';
import type { SourceDatabase } from '../../migration/source/source-schema';
import { createDb, migrateToLatest, type Db } from '../../platform/store/database';

/** The PostgreSQL server tests create their throw-away databases on. */
export const TEST_ADMIN_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * A store migrated to the latest schema, in a database of its own (at `url`, for a service process of the test's
 * own); `drop` closes it and removes the database.
 */
export async function createScratchStore(
  prefix = 'ips_target',
): Promise<{ db: Db; url: string; drop(): Promise<void> }> {
  const scratch = await createScratchDatabase(TEST_ADMIN_URL, prefix);
  const db = createDb(scratch.url, 2);
  await migrateToLatest(db);
  return {
    db,
    url: scratch.url,
    async drop() {
      await db.destroy();
      await scratch.drop();
    },
  };
}

/** A scratch store for the tests around it: made before them, dropped after them. */
export function useScratchStore(prefix?: string): () => Db {
  let store: Awaited<ReturnType<typeof createScratchStore>> | undefined;
  beforeAll(async () => {
    store = await createScratchStore(prefix);
  }, 60_000);
  afterAll(async () => {
    await store?.drop();
  });
  return () => {
    if (!store) throw new Error('the scratch store is used before it was made (outside a test)');
    return store.db;
  };
}

type ScratchDatabase = Awaited<ReturnType<typeof createScratchDatabase>>;

/**
 * A source database of `users` generated users for the tests around it: made (and changed by `prepare`, to give it
 * another shape) before them, dropped after them.
 */
export function useGeneratedSource(users: number, prepare?: (pg: PgClient) => Promise<unknown>): () => ScratchDatabase {
  let source: ScratchDatabase | undefined;
  beforeAll(async () => {
    source = await createScratchDatabase(TEST_ADMIN_URL, 'ips_source');
    await generateSource(source.url, { users });
    if (prepare) {
      const pg = new PgClient({ connectionString: source.url });
      await pg.connect();
      await prepare(pg).finally(() => pg.end());
    }
  }, 120_000);
  afterAll(async () => {
    await source?.drop();
  });
  return () => {
    if (!source) throw new Error('the generated source is used before it was made (outside a test)');
    return source;
  };
}

/** A generated source and the migration's own connection to it, open for the tests around it. */
export function useConnectedSource(...args: Parameters<typeof useGeneratedSource>): () => Kysely<SourceDatabase> {
  const database = useGeneratedSource(...args);
  let source: Kysely<SourceDatabase> | undefined;
  beforeAll(() => {
    source = connectSource(database().url).db;
  });
  afterAll(async () => {
    await source?.destroy();
  });
  return () => source!;
}

/** Migration options as the configuration's defaults give them, for a pass driven directly. */
export const testMigrationOptions = (overrides: Partial<MigrationOptions> = {}): MigrationOptions => ({
  version: 't',
  dryRun: false,
  usersMode: 'CreateOnly',
  migrateClients: true,
  migrateRefreshTokens: false,
  sourceGrantKeysAreUnhashed: false,
  migrateSigningKeys: false,
  // IdentityServer's defaults: 90 days, 14 days, 14 days.
  keyManagement: {
    RotationInterval: 90 * 86_400_000,
    PropagationTime: 14 * 86_400_000,
    RetentionDuration: 14 * 86_400_000,
    KeyCacheDuration: 5000,
  },
  pageSize: 100,
  parallelism: 1,
  ...overrides,
});
