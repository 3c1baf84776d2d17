import { copyUnlessAnyExists, insertSkippingExisting } from '../../migration/store/insert-new';
import { useScratchStore } from '../support/scratch-store';
import { USER_COLUMNS, type MigratedUser } from '../../migration/store/migrated-users';
// The columns and row shape the migration's users pass writes.
const COLUMNS = USER_COLUMNS;
const user = (id: string, extra: Partial<MigratedUser> = {}): MigratedUser => ({
  id,
  email: `${id}@example.com`,
  normalized_email: `${id}@EXAMPLE.COM`.toUpperCase(),
  user_name: `${id}@example.com`,
  normalized_user_name: `${id}@EXAMPLE.COM`.toUpperCase(),
  first_name: null,
  last_name: null,
  company_name: null,
  organization_id: null,
  custom_attributes: {},
  password_hash: null,
  password_format: null,
  migration_version: 'test',
  two_factor_enabled: false,
  email_confirmed: true,
  lockout_end: null,
  access_failed_count: 0,
  security_stamp: null,
  ...extra,
});

describe('writing rows that are expected to be new', () => {
  const db = useScratchStore('ips_store');

  test('COPY carries every character a text or JSON value can hold, and null', async () => {
    const odd = 'tab\there, line\nbreak, return\r, back\\slash, \\N, \\., quote " and ünïcode';
    expect(
      await copyUnlessAnyExists(db(), 'users', COLUMNS, [
        user('copy-1', { first_name: odd, custom_attributes: { department: odd } }),
        user('copy-2'),
      ]),
    ).toBe(2);

    const rows = await db()
      .selectFrom('users')
      .select(['id', 'first_name', 'custom_attributes'])
      .where('id', 'in', ['copy-1', 'copy-2'])
      .orderBy('id')
      .execute();
    expect(rows).toEqual([
      { id: 'copy-1', first_name: odd, custom_attributes: { department: odd } },
      { id: 'copy-2', first_name: null, custom_attributes: {} },
    ]);
  });

  test('a COPY meeting an existing key writes none of its rows and says so', async () => {
    await db()
      .insertInto('users')
      .values({
        id: 'held',
        email: 'held@example.com',
        normalized_email: 'HELD@EXAMPLE.COM',
        user_name: 'held',
        normalized_user_name: 'HELD',
        custom_attributes: '{}',
      })
      .execute();

    expect(
      await copyUnlessAnyExists(db(), 'users', COLUMNS, [
        user('new-1'),
        user('new-2', { normalized_email: 'HELD@EXAMPLE.COM' }),
      ]),
    ).toBeUndefined();
    expect(await db().selectFrom('users').select('id').where('id', 'in', ['new-1', 'new-2']).execute()).toEqual([]);
    // The connection that saw the failure still works for the next write.
    expect(await copyUnlessAnyExists(db(), 'users', COLUMNS, [user('new-1')])).toBe(1);
  });

  test('an insert meeting an existing key falls back to skipping it and writes the others', async () => {
    await db().insertInto('roles').values({ id: 'r-1', name: 'One', normalized_name: 'ONE' }).execute();
    const rows = [
      { id: 'r-1', name: 'One again', normalized_name: 'ONE-AGAIN' },
      { id: 'r-2', name: 'Two', normalized_name: 'TWO' },
    ];

    expect(await insertSkippingExisting(db().insertInto('roles').values(rows))).toBe(1);
    expect((await db().selectFrom('roles').select('name').orderBy('id').execute()).map((r) => r.name)).toEqual([
      'One',
      'Two',
    ]);
  });
});
