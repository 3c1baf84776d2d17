import { createScratchDatabase, generateSource } from '../fixtures/source/generate';
import { createDb, migrateToLatest, type Db } from '../../store/database';

/** The PostgreSQL server tests create their throw-away databases on. */
export const TEST_ADMIN_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** A store migrated to the latest schema, in a database of its own; `drop` closes it and removes the database. */
export async function createScratchStore(prefix = 'ips_target'): Promise<{ db: Db; drop(): Promise<void> }> {
  const scratch = await createScratchDatabase(TEST_ADMIN_URL, prefix);
  const db = createDb(scratch.url, 2);
  await migrateToLatest(db);
  return {
    db,
    async drop() {
      await db.destroy();
      await scratch.drop();
    },
  };
}

type ScratchDatabase = Awaited<ReturnType<typeof createScratchDatabase>>;

/** A source database of `users` generated users for the tests around it: made before them, dropped after them. */
export function useGeneratedSource(users: number): () => ScratchDatabase {
  let source: ScratchDatabase | undefined;
  beforeAll(async () => {
    source = await createScratchDatabase(TEST_ADMIN_URL, 'ips_source');
    await generateSource(source.url, { users });
  }, 120_000);
  afterAll(async () => {
    await source?.drop();
  });
  return () => {
    if (!source) throw new Error('the generated source is used before it was made (outside a test)');
    return source;
  };
}
