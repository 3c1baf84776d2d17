import { Kysely, Migrator, PostgresDialect, type Migration, type MigrationProvider } from 'kysely';
import { Pool } from 'pg';
import * as usersAndProvisions from './migrations/0001_users_and_provisions';
import * as scimAndApps from './migrations/0002_scim_and_apps';
import * as migrationTargets from './migrations/0003_migration_targets';
import * as migrationBulkWrites from './migrations/0004_migration_bulk_writes';
import type { Database } from './schema';

export type Db = Kysely<Database>;

const pools = new WeakMap<Db, Pool>();

export function createDb(connectionString: string, poolSize = 10): Db {
  const pool = new Pool({ connectionString, max: poolSize });
  // An idle connection closed by the server (restart, shutdown) is replaced on next use; it must not crash the process.
  pool.on('error', (error) => console.warn(`store: idle database connection lost: ${error.message}`));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  pools.set(db, pool);
  return db;
}

/** The connection pool under a store, for what kysely does not speak: COPY (see copyUnlessAnyExists). */
export function poolOf(db: Db): Pool {
  const pool = pools.get(db);
  if (!pool) throw new Error('store: this database handle was not made by createDb');
  return pool;
}

/** Migrations are compiled in, so a bundled or containerised service needs no migration folder on disk. */
const provider: MigrationProvider = {
  async getMigrations(): Promise<Record<string, Migration>> {
    return { '0001_users_and_provisions': usersAndProvisions, '0002_scim_and_apps': scimAndApps, '0003_migration_targets': migrationTargets, '0004_migration_bulk_writes': migrationBulkWrites };
  },
};

export async function migrateToLatest(db: Db): Promise<void> {
  const { error, results } = await new Migrator({ db, provider }).migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    throw new Error(`store migration ${failed?.migrationName ?? ''} failed: ${(error as Error | undefined)?.message ?? 'unknown error'}`);
  }
}
