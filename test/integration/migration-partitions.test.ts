import { createKeyRing } from '../../platform/security/data-protection';
import { usersPass } from '../../migration/activities/passes/users';
import { loginsPass, mfaPass, userRolesPass } from '../../migration/activities/passes/user-children';
import type { MigrationOptions } from '../../migration/activities/types';
import type { Db } from '../../platform/store/database';
import { runPages } from '../support/pass-pages';
import { createScratchStore, testMigrationOptions, useConnectedSource } from '../support/scratch-store';
import { countRows } from '../support/rows';

// The users pass runs in key-range partitions side by side; these drive its pages directly against real databases,
// in orders that timing alone would otherwise decide.
const USERS = 600;
const source = useConnectedSource(USERS);
const options = (overrides: Partial<MigrationOptions> = {}) =>
  testMigrationOptions({ version: 'p1', parallelism: 2, ...overrides });

describe('partitions of the users pass', () => {
  let store: Awaited<ReturnType<typeof createScratchStore>>;
  let target: Db;
  beforeEach(async () => {
    store = await createScratchStore();
    target = store.db;
  });
  afterEach(async () => {
    await store.drop();
  });

  // user-00000500 shares the e-mail of user-00000499; the boundary puts them in different partitions.
  const BOUNDARY = 'user-00000499';
  const userIds = async () =>
    (await target.selectFrom('users').select('id').where('id', 'in', ['user-00000499', 'user-00000500']).execute()).map(
      (u) => u.id,
    );

  test.each(['CreateOnly', 'Upsert'] as const)(
    '%s: the first of two users sharing an e-mail in source order wins, even when the later partition writes first',
    async (usersMode) => {
      const ctx = { source: source(), target, options: options({ usersMode }) };
      const later = await runPages(usersPass, ctx, BOUNDARY, null);
      expect(await userIds()).toEqual(['user-00000500']);
      const earlier = await runPages(usersPass, ctx, null, BOUNDARY);

      expect(await userIds()).toEqual(['user-00000499']);
      expect(later.warnings.join('\n') + earlier.warnings.join('\n')).toContain(
        'user user-00000500 skipped: e-mail or user name user499@example.com belongs to user user-00000499',
      );
      // Counted once: the displaced user moves from created to skipped.
      const created = later.created + earlier.created;
      expect(created).toBe(await countRows(target, 'users'));
      expect(later.read + earlier.read).toBe(created + later.skipped + earlier.skipped);
    },
  );

  test('CreateOnly: roles, logins and MFA are added only for users this run created; earlier users are left as they are', async () => {
    const first = { source: source(), target, options: options({ version: 'p1' }) };
    await runPages(usersPass, first);
    await runPages(userRolesPass, first);
    // After cutover the service owns the user: a role removed there must not come back with the next sweep.
    await target.deleteFrom('user_roles').where('user_id', '=', 'user-00000002').execute();

    const sweep = { source: source(), target, options: options({ version: 'p2' }) };
    const users = await runPages(usersPass, sweep);
    const roles = await runPages(userRolesPass, sweep);

    expect(users.created).toBe(0);
    expect(roles).toMatchObject({ read: 0, created: 0 });
    expect(
      await target.selectFrom('user_roles').select('role_id').where('user_id', '=', 'user-00000002').execute(),
    ).toEqual([]);
  });

  test('a login another user holds in the target is skipped; the rest of its page is written', async () => {
    const ctx = { source: source(), target, options: options() };
    await runPages(usersPass, ctx);
    // Linked in the service to an account of its own since: the spec's 409, a skip and not an error.
    await target
      .insertInto('users')
      .values({
        id: 'own-1',
        email: 'own@example.com',
        normalized_email: 'OWN@EXAMPLE.COM',
        user_name: 'own@example.com',
        normalized_user_name: 'OWN@EXAMPLE.COM',
        custom_attributes: '{}',
      })
      .execute();
    await target
      .insertInto('user_logins')
      .values({ login_provider: 'Google', provider_key: 'g-8', user_id: 'own-1' })
      .execute();

    const logins = await runPages(loginsPass, ctx);

    const ownerOf = async (key: string) =>
      (
        await target
          .selectFrom('user_logins')
          .select('user_id')
          .where('login_provider', '=', 'Google')
          .where('provider_key', '=', key)
          .executeTakeFirst()
      )?.user_id;
    expect(await ownerOf('g-8')).toBe('own-1');
    expect(await ownerOf('g-4')).toBe('user-00000004');
    expect(await ownerOf('g-12')).toBe('user-00000012');
    // Users 500 (a duplicate the users pass skipped) and 8 (the login taken) get none.
    expect(logins).toMatchObject({ read: USERS / 4, created: USERS / 4 - 2, skipped: 2 });
  });

  test('Upsert: a user who enrolled MFA in the service keeps it and gets none from the source; the others get theirs', async () => {
    const ctx = {
      source: source(),
      target,
      options: options({ usersMode: 'Upsert' }),
      dataProtection: createKeyRing([{ id: 'test', key: Buffer.alloc(32, 7) }]),
    };
    await runPages(usersPass, ctx);
    await target
      .insertInto('mfa_credentials')
      .values({ id: 'own-1', user_id: 'user-00000005', kind: 'totp', label: 'authenticator-app', secret: 'x' })
      .execute();

    const mfa = await runPages(mfaPass, ctx);

    const labels = async (userId: string) =>
      (
        await target
          .selectFrom('mfa_credentials')
          .select('label')
          .where('user_id', '=', userId)
          .orderBy('label')
          .execute()
      ).map((m) => m.label);
    expect(await labels('user-00000005')).toEqual(['authenticator-app']);
    expect(await labels('user-00000010')).toEqual(['source-rc-1', 'source-rc-2', 'source-rc-3', 'source-totp']);
    // The four source credentials of user 5 are skipped, and so are the four of user 500, whom the users pass skipped as
    // a duplicate; every other row of the table was created by the pass.
    expect(await labels('user-00000500')).toEqual([]);
    expect(mfa.skipped).toBe(8);
    expect(mfa.created).toBe((await countRows(target, 'mfa_credentials')) - 1);
  });
});
