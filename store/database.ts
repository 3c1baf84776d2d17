import { Kysely, Migrator, PostgresDialect, type Migration, type MigrationProvider } from 'kysely';
import { Pool } from 'pg';
import * as usersAndProvisions from './migrations/0001_users_and_provisions';
import type { Database } from './schema';

export type Db = Kysely<Database>;

export function createDb(connectionString: string, poolSize = 10): Db {
  return new Kysely<Database>({
    dialect: new PostgresDialect({ pool: new Pool({ connectionString, max: poolSize }) }),
  });
}

/** Migrations are compiled in, so a bundled or containerised service needs no migration folder on disk. */
const provider: MigrationProvider = {
  async getMigrations(): Promise<Record<string, Migration>> {
    return { '0001_users_and_provisions': usersAndProvisions };
  },
};

export async function migrateToLatest(db: Db): Promise<void> {
  const { error, results } = await new Migrator({ db, provider }).migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    throw new Error(`store migration ${failed?.migrationName ?? ''} failed: ${(error as Error | undefined)?.message ?? 'unknown error'}`);
  }
}
