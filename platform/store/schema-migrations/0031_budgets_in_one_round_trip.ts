import { sql, type Kysely } from 'kysely';

/**
 * The per-address budgets (`sign_in_attempts`, `rate_limit_hits`) record and count a request in one call instead of a
 * transaction of four round trips (begin, the advisory lock, the statements, commit). Parallel requests of one key, at
 * any API process, still take turns on the same transaction-scoped advisory lock as before; inside a PL/pgSQL
 * function each statement reads a snapshot taken when it starts (read committed), so the count, taken after the lock
 * was granted, sees the rows of every request that held it before.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`create function count_sign_in_attempt(p_address text, p_window_seconds double precision) returns bigint
    language plpgsql volatile as $$
    declare n bigint;
    begin
      perform pg_advisory_xact_lock(hashtextextended('sign-in' || chr(10) || p_address, 0));
      insert into sign_in_attempts (address) values (p_address);
      select count(*) into n from sign_in_attempts
        where address = p_address and at > now() - make_interval(secs => p_window_seconds);
      return n;
    end $$`.execute(db);
  await sql`create function count_rate_limit_hit(p_bucket text, p_key text, p_window_seconds double precision)
    returns bigint language plpgsql volatile as $$
    declare n bigint;
    begin
      perform pg_advisory_xact_lock(hashtextextended(p_bucket || chr(10) || p_key, 0));
      insert into rate_limit_hits (bucket, key, expires_at)
        values (p_bucket, p_key, now() + make_interval(secs => p_window_seconds));
      select count(*) into n from rate_limit_hits
        where bucket = p_bucket and key = p_key and at > now() - make_interval(secs => p_window_seconds);
      return n;
    end $$`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop function count_rate_limit_hit(text, text, double precision)`.execute(db);
  await sql`drop function count_sign_in_attempt(text, double precision)`.execute(db);
}
