import { createHash, randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import type { Db } from '../../platform/store/database';
import type { AccountTokensTable } from '../../platform/store/schema';

export type AccountTokenPurpose = AccountTokensTable['purpose'];

const digest = (value: string) => createHash('sha256').update(value).digest('base64url');

/**
 * What ties a token to the account as it was when the token was made, ASP.NET Identity's security stamp: the password
 * hash, the address the link was mailed to, and the last time every sign-in of the user ended (a password reset or
 * change, a change of the second factor, "sign out everywhere", a deactivation). A change of any of them since makes
 * the token dead; a deactivated and reactivated account does not bring it back. Computed by the store from the user's
 * row, when the token is made and when it is used.
 */
const stampOfUser = sql<string>`encode(sha256(convert_to(concat_ws(chr(10),
  coalesce(users.password_hash, ''), users.normalized_email,
  coalesce(extract(epoch from users.sessions_revoked_at)::text, '')), 'UTF8')), 'base64')`;

/** A token's budget: at most `limit` tokens of the purpose per user in `windowMinutes`. */
export interface TokenBudget {
  limit: number;
  windowMinutes: number;
}

/**
 * Makes a single-use token for a mailed link, within the user's budget: 32 random bytes, of which only the SHA-256
 * digest is stored, valid for `minutes`. Answers the token itself (for the link only), or undefined when the budget is
 * spent. The user's row is locked while the budget is counted and the token written, so parallel requests on any API
 * process count one after another.
 */
export async function createAccountToken(
  db: Db,
  purpose: AccountTokenPurpose,
  userId: string,
  minutes: number,
  budget: TokenBudget,
  /** An `email-change` token's new address (the one its link is mailed to). */
  newEmail?: string,
): Promise<string | undefined> {
  const token = randomBytes(32).toString('base64url');
  return db.transaction().execute(async (trx) => {
    const user = await trx.selectFrom('users').select('id').where('id', '=', userId).forUpdate().executeTakeFirst();
    if (!user) return undefined;
    const { n } = await trx
      .selectFrom('account_tokens')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('user_id', '=', userId)
      .where('purpose', '=', purpose)
      .where('created_at', '>', sql<Date>`now() - make_interval(mins => ${budget.windowMinutes})`)
      .executeTakeFirstOrThrow();
    if (Number(n) >= budget.limit) return undefined;
    await trx
      .insertInto('account_tokens')
      .columns(['token_hash', 'purpose', 'user_id', 'stamp', 'expires_at', 'new_email'])
      .expression((eb) =>
        eb
          .selectFrom('users')
          .select([
            sql<string>`${digest(token)}::text`.as('token_hash'),
            sql<AccountTokenPurpose>`${purpose}::text`.as('purpose'),
            'users.id',
            stampOfUser.as('stamp'),
            sql<Date>`now() + make_interval(mins => ${minutes})`.as('expires_at'),
            sql<string | null>`${newEmail ?? null}::text`.as('new_email'),
          ])
          .where('users.id', '=', userId),
      )
      .execute();
    return token;
  });
}

/** A use of a mailed link's token: the user it was made for, when it is live; undefined otherwise. */
type TokenUse = (db: Db, purpose: AccountTokenPurpose, token: string) => Promise<string | undefined>;

/** Whether the token would be taken now: unused, unexpired, for an active user whose stamp is the one it was made for. */
export const peekAccountToken: TokenUse = async (db, purpose, token) => {
  const row = await db
    .selectFrom('account_tokens')
    .innerJoin('users', 'users.id', 'account_tokens.user_id')
    .select('account_tokens.user_id')
    .where('account_tokens.token_hash', '=', digest(token))
    .where('account_tokens.purpose', '=', purpose)
    .where('account_tokens.used_at', 'is', null)
    .where('account_tokens.expires_at', '>', sql<Date>`now()`)
    .where('users.active', '=', true)
    .where('account_tokens.stamp', '=', stampOfUser)
    .executeTakeFirst();
  return row?.user_id;
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

/**
 * Takes a live `email-change` token, as takeAccountToken does: the user it was made for and the address it confirms.
 * Made when the address was the old one, it dies once the address (or the password, or the sessions) changed since.
 */
export async function takeEmailChange(
  db: Db,
  token: string,
): Promise<{ userId: string; newEmail: string } | undefined> {
  const row = await db
    .selectFrom('account_tokens')
    .select('new_email')
    .where('token_hash', '=', digest(token))
    .where('purpose', '=', 'email-change')
    .executeTakeFirst();
  const userId = await takeAccountToken(db, 'email-change', token);
  return userId && row?.new_email ? { userId, newEmail: row.new_email } : undefined;
}

/** Tokens past their time or used are kept a day (for the audit of a dispute), then deleted. */
export async function purgeAccountTokens(db: Db): Promise<number> {
  const result = await db
    .deleteFrom('account_tokens')
    .where('expires_at', '<', sql<Date>`now() - interval '1 day'`)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
