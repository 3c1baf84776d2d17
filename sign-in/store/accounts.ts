import type { Db } from '../../platform/store/database';
import { isUniqueViolation } from '../../platform/store/errors';
import { newSecurityStamp } from '../../platform/store/oidc-payloads';
import { normalize } from '../../platform/store/users';

/**
 * What account recovery and the account pages read and change of a user: the credential, the e-mail confirmation,
 * the lockout and two-step verification. Every write here is idempotent.
 */

/** An active user, as recovery needs it, by address or by id (undefined for an unknown or deactivated one). */
function findRecovery(db: Db, by: 'normalized_email' | 'id', value: string) {
  return db
    .selectFrom('users')
    .select(['id', 'email', 'password_hash', 'email_confirmed'])
    .where(by, '=', value)
    .where('active', '=', true)
    .executeTakeFirst();
}

export const findRecoveryUser = (db: Db, email: string) => findRecovery(db, 'normalized_email', normalize(email));
export const findRecoveryUserById = (db: Db, userId: string) => findRecovery(db, 'id', userId);

export type RecoveryUser = NonNullable<Awaited<ReturnType<typeof findRecoveryUser>>>;

/**
 * A new password (a native hash): the lockout and the failure count go with the old one, as after ASP.NET Identity's
 * ResetPasswordAsync the user signs in at once. Tokens made for the old password die (their stamp no longer matches).
 */
export async function setPasswordHash(db: Db, userId: string, hash: string): Promise<void> {
  await db
    .updateTable('users')
    .set({
      password_hash: hash,
      password_format: 'native',
      access_failed_count: 0,
      lockout_end: null,
      updated_at: new Date(),
    })
    .where('id', '=', userId)
    .execute();
}

/** Clears the lockout and the failure count; false for an unknown user. */
export async function unlockUser(db: Db, userId: string): Promise<boolean> {
  const row = await db
    .updateTable('users')
    .set({ access_failed_count: 0, lockout_end: null })
    .where('id', '=', userId)
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

export async function markEmailConfirmed(db: Db, userId: string): Promise<void> {
  await db.updateTable('users').set({ email_confirmed: true }).where('id', '=', userId).execute();
}

/** Removes the authenticator and the recovery codes and turns two-step verification off; whether the user had any. */
export async function removeMfa(db: Db, userId: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const removed = await trx.deleteFrom('mfa_credentials').where('user_id', '=', userId).returning('id').execute();
    // ASP.NET Identity's SetTwoFactorEnabledAsync and ResetAuthenticatorKeyAsync change the stamp too.
    await trx
      .updateTable('users')
      .set({ two_factor_enabled: false, security_stamp: newSecurityStamp() })
      .where('id', '=', userId)
      .execute();
    return removed.length > 0;
  });
}

/** Replaces the user's recovery codes with these keyed hashes (ids are the caller's). */
export async function replaceRecoveryCodes(
  db: Db,
  userId: string,
  codes: Array<{ id: string; label: string; hash: string }>,
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    await trx.deleteFrom('mfa_credentials').where('user_id', '=', userId).where('kind', '=', 'recovery-code').execute();
    if (codes.length > 0)
      await trx
        .insertInto('mfa_credentials')
        .values(
          codes.map((c) => ({ id: c.id, user_id: userId, kind: 'recovery-code', label: c.label, secret: c.hash })),
        )
        .execute();
  });
}

/** How many unused recovery codes the user has. */
export async function countRecoveryCodes(db: Db, userId: string): Promise<number> {
  const row = await db
    .selectFrom('mfa_credentials')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('user_id', '=', userId)
    .where('kind', '=', 'recovery-code')
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The user's own name, as the account page shows and changes it. */
export async function findNames(db: Db, userId: string) {
  const row = await db
    .selectFrom('users')
    .select(['first_name', 'last_name'])
    .where('id', '=', userId)
    .executeTakeFirst();
  return { firstName: row?.first_name ?? null, lastName: row?.last_name ?? null };
}

export async function setNames(db: Db, userId: string, firstName: string | null, lastName: string | null) {
  await db
    .updateTable('users')
    .set({ first_name: firstName, last_name: lastName, updated_at: new Date() })
    .where('id', '=', userId)
    .execute();
}

/**
 * A new address confirmed by its link: the address, confirmed (the link proved it), and the user name with it where
 * the user name was the address (ASP.NET Identity's UI, ConfirmEmailChange: "In our UI email and user name are one
 * and the same, so when we update the email we need to update the user name"). `taken` when another account has the
 * address by now; `gone` for a user no longer active. Answers the old address too.
 */
export async function changeEmail(
  db: Db,
  userId: string,
  newEmail: string,
): Promise<{ status: 'changed'; oldEmail: string } | { status: 'taken' | 'gone' }> {
  try {
    return await db.transaction().execute(async (trx) => {
      const user = await trx
        .selectFrom('users')
        .select(['email', 'normalized_email', 'normalized_user_name'])
        .where('id', '=', userId)
        .where('active', '=', true)
        .forUpdate()
        .executeTakeFirst();
      if (!user) return { status: 'gone' as const };
      const userNameIsEmail = user.normalized_user_name === user.normalized_email;
      await trx
        .updateTable('users')
        .set({
          email: newEmail,
          normalized_email: normalize(newEmail),
          email_confirmed: true,
          ...(userNameIsEmail && { user_name: newEmail, normalized_user_name: normalize(newEmail) }),
          // ASP.NET Identity's ChangeEmailAsync (and SetUserNameAsync) change the stamp too.
          security_stamp: newSecurityStamp(),
          updated_at: new Date(),
        })
        .where('id', '=', userId)
        .execute();
      return { status: 'changed' as const, oldEmail: user.email };
    });
  } catch (error) {
    if (isUniqueViolation(error)) return { status: 'taken' };
    throw error;
  }
}
