import { sql, type Kysely } from 'kysely';

/**
 * `account_tokens.password_stamp` becomes `stamp`: a digest of what the token was made for (the password, the address
 * and the last end of every sign-in), as ASP.NET Identity ties its tokens to the security stamp.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table account_tokens rename column password_stamp to stamp`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`alter table account_tokens rename column stamp to password_stamp`.execute(db);
}
