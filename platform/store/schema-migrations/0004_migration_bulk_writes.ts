import { sql, type Kysely } from 'kysely';

const CHILD_KEYS = [
  ['user_logins', 'user_logins_user_id_fkey', 'user_id', 'users'],
  ['user_roles', 'user_roles_user_id_fkey', 'user_id', 'users'],
  ['user_roles', 'user_roles_role_id_fkey', 'role_id', 'roles'],
  ['mfa_credentials', 'mfa_credentials_user_id_fkey', 'user_id', 'users'],
] as const;

/**
 * Two changes for the migration's bulk writes.
 *
 * `users.migration_version`: the run (its Version) that created the user. Under CreateOnly a user that existed
 * before a run is left as it is, roles, logins and MFA included, so the passes after the users pass work only on
 * the users this run created.
 *
 * The logins, role links and MFA credentials of a user lose their foreign keys; triggers delete them with their
 * user or role instead, as `on delete cascade` did. PostgreSQL checks a foreign key row by row, locking the
 * referenced row, and side-by-side pages locking the same user or role rows turn those locks into multixacts that
 * slow the inserts several times over (docs/benchmarks.md). The migration, the only writer of
 * these tables, writes child rows only for users it has just read from the store.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('users').addColumn('migration_version', 'text').execute();
  for (const [table, constraint] of CHILD_KEYS) await db.schema.alterTable(table).dropConstraint(constraint).execute();
  await sql`create function delete_user_children() returns trigger language plpgsql as $$
    begin
      delete from user_logins where user_id = old.id;
      delete from user_roles where user_id = old.id;
      delete from mfa_credentials where user_id = old.id;
      return old;
    end $$`.execute(db);
  await sql`create trigger users_delete_children after delete on users for each row execute function delete_user_children()`.execute(
    db,
  );
  await sql`create function delete_role_links() returns trigger language plpgsql as $$
    begin
      delete from user_roles where role_id = old.id;
      return old;
    end $$`.execute(db);
  await sql`create trigger roles_delete_links after delete on roles for each row execute function delete_role_links()`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop trigger roles_delete_links on roles`.execute(db);
  await sql`drop function delete_role_links()`.execute(db);
  await sql`drop trigger users_delete_children on users`.execute(db);
  await sql`drop function delete_user_children()`.execute(db);
  for (const [table, constraint, column, referenced] of CHILD_KEYS) {
    await db.schema
      .alterTable(table)
      .addForeignKeyConstraint(constraint, [column], referenced, ['id'], (c) => c.onDelete('cascade'))
      .execute();
  }
  await db.schema.alterTable('users').dropColumn('migration_version').execute();
}
