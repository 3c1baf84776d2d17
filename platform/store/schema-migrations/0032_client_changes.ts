import { sql, type Kysely } from 'kysely';

/**
 * Every change to a client or its secrets is announced on the `ips_client_changes` channel with the client's id (`*`
 * for a truncation), after it commits: each API process keeps the clients it authenticated (platform/store/
 * client-reads.ts) and drops one as soon as it hears of a change, whoever made it (the admin API, a migration pass,
 * an operator's SQL).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create function notify_client_change() returns trigger language plpgsql as $$
    begin
      if tg_level = 'STATEMENT' then
        perform pg_notify('ips_client_changes', '*');
      elsif tg_op = 'DELETE' then
        perform pg_notify('ips_client_changes', old.client_id);
      else
        perform pg_notify('ips_client_changes', new.client_id);
        if tg_op = 'UPDATE' and old.client_id <> new.client_id then
          perform pg_notify('ips_client_changes', old.client_id);
        end if;
      end if;
      return null;
    end $$`.execute(db);
  for (const table of ['clients', 'client_secrets']) {
    await sql`create trigger ${sql.raw(`${table}_changed`)} after insert or update or delete on ${sql.table(table)}
      for each row execute function notify_client_change()`.execute(db);
    await sql`create trigger ${sql.raw(`${table}_truncated`)} after truncate on ${sql.table(table)}
      for each statement execute function notify_client_change()`.execute(db);
  }
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['clients', 'client_secrets']) {
    await sql`drop trigger ${sql.raw(`${table}_truncated`)} on ${sql.table(table)}`.execute(db);
    await sql`drop trigger ${sql.raw(`${table}_changed`)} on ${sql.table(table)}`.execute(db);
  }
  await sql`drop function notify_client_change()`.execute(db);
}
