import type { Kysely } from 'kysely';
import { Client as PgClient } from 'pg';
import { refreshTokensPass } from '../../activities/migration/passes/providers';
import type { MigrationOptions } from '../../activities/migration/types';
import { validateSource } from '../../activities/migration/validation';
import { connectSource } from '../../migration-source/connection';
import { createScratchDatabase, generateSource } from '../fixtures/source/generate';
import type { SourceDatabase } from '../../migration-source/schema';
import type { Db } from '../../store/database';
import { runPages } from '../support/pass-pages';
import { createScratchStore, TEST_ADMIN_URL } from '../support/scratch-store';

describe('a source from before Duende IdentityServer 6.1, whose PersistedGrants has Key as its primary key and no Id', () => {
  let sourceDb: Awaited<ReturnType<typeof createScratchDatabase>>;
  let store: Awaited<ReturnType<typeof createScratchStore>>;
  let source: Kysely<SourceDatabase>;
  let target: Db;

  beforeAll(async () => {
    sourceDb = await createScratchDatabase(TEST_ADMIN_URL, 'ips_source');
    await generateSource(sourceDb.url, { users: 40 });
    const pg = new PgClient({ connectionString: sourceDb.url });
    await pg.connect();
    await pg.query(
      `alter table "PersistedGrants" drop column "Id"; alter table "PersistedGrants" alter column "Key" set not null; alter table "PersistedGrants" add constraint "PK_PersistedGrants" primary key ("Key")`,
    );
    await pg.end();
    source = connectSource(sourceDb.url).db;
    store = await createScratchStore();
    target = store.db;
  }, 120_000);
  afterAll(async () => {
    await source?.destroy();
    await sourceDb?.drop();
    await store?.drop();
  });

  test('the inventory finds everything it reads', async () => {
    const grants = (await validateSource(source)).inventory.find((t) => t.table === 'PersistedGrants');
    expect(grants).toEqual({ table: 'PersistedGrants', found: true, missingColumns: [] });
  });

  test('refresh tokens are paged by Key and copied', async () => {
    const options: MigrationOptions = {
      version: 's1',
      dryRun: false,
      usersMode: 'CreateOnly',
      migrateClients: true,
      migrateRefreshTokens: true,
      sourceGrantKeysAreUnhashed: true,
      pageSize: 3,
      parallelism: 1,
    };
    const total = await runPages(refreshTokensPass, { source, target, options });
    // The fixture holds 20 grants, 10 of them live refresh tokens.
    expect(total).toMatchObject({ read: 10, created: 10, pages: 4 });
    expect((await target.selectFrom('grants').select('key').orderBy('key').execute()).map((g) => g.key)).toHaveLength(
      10,
    );
  });
});
