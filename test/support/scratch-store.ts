import { createScratchDatabase } from '../../source/fixture/generate';
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
