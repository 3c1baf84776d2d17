import { refreshTokensPass } from '../../migration/activities/passes/refresh-tokens';
import { validateSource } from '../../migration/activities/validation';
import { runPages } from '../support/pass-pages';
import { testMigrationOptions, useConnectedSource, useScratchStore } from '../support/scratch-store';

describe('a source from before Duende IdentityServer 6.1, whose PersistedGrants has Key as its primary key and no Id', () => {
  const source = useConnectedSource(40, (pg) =>
    pg.query(
      `alter table "PersistedGrants" drop column "Id"; alter table "PersistedGrants" alter column "Key" set not null; alter table "PersistedGrants" add constraint "PK_PersistedGrants" primary key ("Key")`,
    ),
  );
  const target = useScratchStore();

  test('the inventory finds everything it reads', async () => {
    const grants = (await validateSource(source())).inventory.find((t) => t.table === 'PersistedGrants');
    expect(grants).toEqual({ table: 'PersistedGrants', found: true, missingColumns: [] });
  });

  test('refresh tokens are paged by Key and copied', async () => {
    const options = testMigrationOptions({ migrateRefreshTokens: true, sourceGrantKeysAreUnhashed: true, pageSize: 3 });
    const total = await runPages(refreshTokensPass, { source: source(), target: target(), options });
    // The fixture holds 20 refresh tokens, 10 of them live: the expired ones are read and counted as not carried over.
    expect(total).toMatchObject({ read: 20, created: 10, skipped: 10, pages: 7 });
    expect((await target().selectFrom('grants').select('key').orderBy('key').execute()).map((g) => g.key)).toHaveLength(
      10,
    );
  });
});
