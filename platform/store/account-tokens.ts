import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from './database';
import type { AccountTokensTable } from './schema';

export type AccountTokenPurpose = AccountTokensTable['purpose'];

const digest = (value: string) => createHash('sha256').update(value).digest('base64url');

/** What ties a token to the password it was made for: a password changed since (any way) makes the token dead. */
const stampOf = (passwordHash: string | null) => digest(`password:${passwordHash ?? ''}`);

/**
 * Makes a single-use token for a mailed link: 32 random bytes, of which only the SHA-256 digest is stored, valid for
 * `minutes`. Answers the token itself, for the link only.
 */
export async function createAccountToken(
  db: Db,
  purpose: AccountTokenPurpose,
  user: { id: string; password_hash: string | null },
  minutes: number,
): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  await db
    .insertInto('account_tokens')
    .values({
      token_hash: digest(token),
      purpose,
      user_id: user.id,
      password_stamp: stampOf(user.password_hash),
      expires_at: sql<Date>`now() + make_interval(mins => ${minutes})`,
    })
    .execute();
  return token;
}

/** A use of a mailed link's token: the user it was made for, when it is live; undefined otherwise. */
type TokenUse = (db: Db, purpose: AccountTokenPurpose, token: string) => Promise<string | undefined>;

/** The live token's user: unused, unexpired, made for the password the user has now; undefined otherwise. */
function liveToken(db: Db, purpose: AccountTokenPurpose, token: string) {
  return db
    .selectFrom('account_tokens')
    .innerJoin('users', 'users.id', 'account_tokens.user_id')
    .select(['account_tokens.user_id', 'account_tokens.password_stamp', 'users.password_hash'])
    .where('account_tokens.token_hash', '=', digest(token))
    .where('account_tokens.purpose', '=', purpose)
    .where('account_tokens.used_at', 'is', null)
    .where('account_tokens.expires_at', '>', sql<Date>`now()`)
    .where('users.active', '=', true);
}

/** Whether the token would be taken now (the reset form is shown only for one that would). */
export const peekAccountToken: TokenUse = async (db, purpose, token) => {
  const row = await liveToken(db, purpose, token).executeTakeFirst();
  return row && row.password_stamp === stampOf(row.password_hash) ? row.user_id : undefined;
};

/**
 * Takes a live token, once, and with it every other unused token of the user for the same purpose (one statement):
 * of two requests racing with the same token, one gets the user and the other nothing.
 */
export const takeAccountToken: TokenUse = async (db, purpose, token) => {
  const userId = await peekAccountToken(db, purpose, token);
  if (!userId) return undefined;
  const taken = await db
    .updateTable('account_tokens')
    .set({ used_at: sql<Date>`now()` })
    .where('user_id', '=', userId)
    .where('purpose', '=', purpose)
    .where('used_at', 'is', null)
    .returning('token_hash')
    .execute();
  return taken.some((row) => row.token_hash === digest(token)) ? userId : undefined;
};

/** How many tokens of this purpose were made for the user in the last `minutes` (the per-account budget). */
export async function countRecentAccountTokens(
  db: Db,
  userId: string,
  purpose: AccountTokenPurpose,
  minutes: number,
): Promise<number> {
  const row = await db
    .selectFrom('account_tokens')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('user_id', '=', userId)
    .where('purpose', '=', purpose)
    .where('created_at', '>', sql<Date>`now() - make_interval(mins => ${minutes})`)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Tokens past their time or used are kept a day (for the audit of a dispute), then deleted. */
export async function purgeAccountTokens(db: Db): Promise<number> {
  const result = await db
    .deleteFrom('account_tokens')
    .where('expires_at', '<', sql<Date>`now() - interval '1 day'`)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
