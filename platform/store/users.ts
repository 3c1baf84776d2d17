import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Db } from './database';
import type { Database, SignOutNotice, UserRow } from './schema';
import { safeStringMap } from '../security/object-keys';
import { isUniqueViolation } from './errors';
import { deletedAny } from './row-counts';
import { removeOnce } from './user-removals';
import { tombstoneUserIn } from './read-through-guards';
import { endSignInsIn } from './oidc-payloads';
import { logger } from '../observability/logger';

/** The user as provisioning, the API and downstream apps see it: never the password hash. */
export interface UserProfile {
  userId: string;
  email: string;
  firstName: string | null;
  lastName: string | null;
  organizationId: string | null;
  customAttributes: Record<string, string>;
  active: boolean;
}

export type NewUser = Omit<UserProfile, 'active'> & {
  /** Defaults to the e-mail; SCIM clients choose their own. */
  userName?: string;
  externalId?: string | null;
  /** Whether the address is known to be the user's (ASP.NET Identity's EmailConfirmed); false when absent. */
  emailConfirmed?: boolean;
};

export class DuplicateUserError extends Error {
  readonly code = 'DUPLICATE_USER';
}

/** The columns a user's profile is read from. */
export const PROFILE_COLUMNS = [
  'id',
  'email',
  'first_name',
  'last_name',
  'organization_id',
  'custom_attributes',
  'active',
] as const;

/**
 * `exists (…)` for the user with this id, as one index probe per id: behind `offset 0`, so that PostgreSQL cannot
 * turn a page of them into a join (given `id = any(…)` with 10,000 ids it estimated the probes dearer than reading
 * the whole table, and at 1M users read all of `users` for every page). `createdBy`: only a user that this migration
 * Version created.
 */
export function userExists(userId: RawBuilder<unknown>, createdBy?: string): RawBuilder<boolean> {
  const created = createdBy === undefined ? sql`` : sql` and users.migration_version = ${createdBy}`;
  return sql<boolean>`exists (select from users where users.id = ${userId}${created} offset 0)`;
}

export function normalize(value: string): string {
  return value.normalize('NFKC').toUpperCase();
}

function toProfile(row: Pick<UserRow, (typeof PROFILE_COLUMNS)[number]>): UserProfile {
  return {
    userId: row.id,
    email: row.email,
    firstName: row.first_name,
    lastName: row.last_name,
    organizationId: row.organization_id,
    // Rows written before the edge refused such keys, or by hand, must not hand a prototype key to code that merges.
    customAttributes: safeStringMap(row.custom_attributes ?? {}, (key) =>
      logger.warn(`store: user ${row.id} has the attribute name "${key}", which is ignored`),
    ),
    active: row.active,
  };
}

export async function insertUser(
  db: Kysely<Database>,
  user: NewUser,
  passwordHash: string | null,
): Promise<UserProfile> {
  try {
    const row = await db
      .insertInto('users')
      .values({
        id: user.userId,
        email: user.email,
        normalized_email: normalize(user.email),
        user_name: user.userName ?? user.email,
        normalized_user_name: normalize(user.userName ?? user.email),
        external_id: user.externalId ?? null,
        first_name: user.firstName,
        last_name: user.lastName,
        organization_id: user.organizationId,
        custom_attributes: JSON.stringify(user.customAttributes),
        password_hash: passwordHash,
        email_confirmed: user.emailConfirmed ?? false,
      })
      .returning(PROFILE_COLUMNS)
      .executeTakeFirstOrThrow();
    return toProfile(row);
  } catch (error) {
    if (isUniqueViolation(error))
      throw new DuplicateUserError(
        `a user with e-mail ${user.email}, user name ${user.userName ?? user.email} or id ${user.userId} already exists`,
      );
    throw error;
  }
}

export async function findUser(db: Db, userId: string): Promise<UserProfile | undefined> {
  const row = await db.selectFrom('users').select(PROFILE_COLUMNS).where('id', '=', userId).executeTakeFirst();
  return row && toProfile(row);
}

export async function findUserIdByEmailOrUserName(
  db: Db,
  email: string,
  userName: string,
): Promise<string | undefined> {
  const row = await db
    .selectFrom('users')
    .select('id')
    .where((eb) =>
      eb.or([eb('normalized_email', '=', normalize(email)), eb('normalized_user_name', '=', normalize(userName))]),
    )
    .executeTakeFirst();
  return row?.id;
}

export async function findUserIdByEmail(db: Db, email: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('users')
    .select('id')
    .where('normalized_email', '=', normalize(email))
    .executeTakeFirst();
  return row?.id;
}

/** Applies what downstream apps assigned during a transaction. */
export async function updateUserAttributes(
  db: Db,
  userId: string,
  changes: { organizationId: string | null; customAttributes: Record<string, string> },
): Promise<UserProfile | undefined> {
  const row = await db
    .updateTable('users')
    .set({
      organization_id: changes.organizationId,
      custom_attributes: JSON.stringify(changes.customAttributes),
      updated_at: new Date(),
    })
    .where('id', '=', userId)
    .returning(PROFILE_COLUMNS)
    .executeTakeFirst();
  return row && toProfile(row);
}

/**
 * Deletes the user and its provision records together; returns the apps it had been provisioned into. Under a
 * `removalId` a second run answers what the first did (store/user-removals.ts).
 */
export async function deleteUserReturningApps(
  db: Db,
  userId: string,
  removalId?: string,
): Promise<{ deleted: boolean; appIds: string[]; signOuts: SignOutNotice[] }> {
  const { found, appIds, signOuts } = await removeOnce(db, removalId, async (trx) => {
    const provisions = await trx
      .selectFrom('user_provisions')
      .select('app_id')
      .where('user_id', '=', userId)
      .orderBy('provisioned_at')
      .execute();
    // The user's sessions end with it, and the clients that listen are told (back-channel logout).
    const { signOuts } = await endSignInsIn(trx, userId);
    const result = await trx.deleteFrom('users').where('id', '=', userId).executeTakeFirst();
    // The source may still hold the user: the read-through window and later sweeps must not make it again.
    if (deletedAny(result)) await tombstoneUserIn(trx, userId, 'deleted');
    return { found: deletedAny(result), appIds: provisions.map((p) => p.app_id), signOuts };
  });
  return { deleted: found, appIds, signOuts };
}

/** The domain of an e-mail address, lower case (what SSO domains are matched against). */
/**
 * The domain of an address as the SSO-domain rule compares it: folded as `normalize` folds the address an account is
 * found by (NFKC), so no spelling that finds an account (`ｃorp.test`) escapes the rule its plain form is under.
 */
export const domainOf = (email: string) => {
  const folded = email.normalize('NFKC');
  return folded.slice(folded.lastIndexOf('@') + 1).toLowerCase();
};

export async function findUserEmail(db: Db, userId: string): Promise<string | undefined> {
  return (await db.selectFrom('users').select('email').where('id', '=', userId).executeTakeFirst())?.email;
}

/** What federated linking needs to know of an existing account with the same e-mail. */
export async function findLinkCandidate(db: Db, userId: string) {
  const row = await db
    .selectFrom('users')
    .select(['active', 'email_confirmed', (eb) => eb('password_hash', 'is not', null).as('has_password')])
    .where('id', '=', userId)
    .executeTakeFirst();
  return row && { active: row.active, emailConfirmed: row.email_confirmed, hasPassword: row.has_password === true };
}

/** The active user behind a signed-in session, as the account pages need it. */
export async function findAccountUser(db: Db, userId: string) {
  const row = await db
    .selectFrom('users')
    .select(['id', 'email', (eb) => eb('password_hash', 'is not', null).as('has_password')])
    .where('id', '=', userId)
    .where('active', '=', true)
    .executeTakeFirst();
  return row && { id: row.id, email: row.email, hasPassword: row.has_password === true };
}

/**
 * One page of users in the order of their folded e-mail (`normalized_email`, unique, so a total order its index
 * serves), after `afterEmail`; with `search`, only those whose e-mail, first and last name (together) or id contains
 * it, compared as `normalize` folds (strpos: the text is never a LIKE pattern).
 */
export async function listUsersPage(
  db: Db,
  { search, afterEmail, limit }: { search?: string; afterEmail?: string; limit: number },
): Promise<Array<UserProfile & { normalizedEmail: string }>> {
  let query = db.selectFrom('users').select([...PROFILE_COLUMNS, 'normalized_email']);
  if (afterEmail !== undefined) query = query.where('normalized_email', '>', afterEmail);
  if (search !== undefined) {
    const folded = normalize(search);
    query = query.where((eb) =>
      eb.or([
        eb(sql`strpos(normalized_email, ${folded})`, '>', 0),
        eb(sql`strpos(upper(normalize(concat_ws(' ', first_name, last_name), NFKC)), ${folded})`, '>', 0),
        eb(sql`strpos(upper(id), ${folded})`, '>', 0),
      ]),
    );
  }
  const rows = await query.orderBy('normalized_email').limit(limit).execute();
  return rows.map((row) => ({ ...toProfile(row), normalizedEmail: row.normalized_email }));
}

/** What an admin changes of a user: a field left out is kept; null clears a name; an attribute set to null is removed. */
export interface ProfileChanges {
  email?: string;
  emailConfirmed?: boolean;
  firstName?: string | null;
  lastName?: string | null;
  customAttributes?: Record<string, string | null>;
}

/**
 * Applies an admin's changes in one statement; undefined when there is no such user. A new e-mail leaves the address
 * unconfirmed unless the admin says otherwise (ASP.NET Identity's UserManager.SetEmailAsync sets EmailConfirmed false),
 * and takes the user name along where it was the old e-mail (the default), so the old address is free for another
 * account. A new e-mail another user holds (as e-mail or user name) is a DuplicateUserError.
 */
export async function updateUserProfile(
  db: Db,
  userId: string,
  changes: ProfileChanges,
): Promise<UserProfile | undefined> {
  const { email, emailConfirmed, firstName, lastName, customAttributes } = changes;
  const removed = Object.keys(customAttributes ?? {}).filter((name) => customAttributes![name] === null);
  const set = Object.fromEntries(Object.entries(customAttributes ?? {}).filter(([, value]) => value !== null));
  try {
    const row = await db
      .updateTable('users')
      .set((eb) => ({
        ...(firstName !== undefined && { first_name: firstName }),
        ...(lastName !== undefined && { last_name: lastName }),
        ...(customAttributes !== undefined && {
          custom_attributes: sql`(coalesce(custom_attributes, '{}'::jsonb) - ${sql.val(removed)}::text[]) || ${JSON.stringify(set)}::jsonb`,
        }),
        ...(email !== undefined && {
          email,
          normalized_email: normalize(email),
          email_confirmed: sql<boolean>`case when normalized_email = ${normalize(email)} then email_confirmed else ${emailConfirmed ?? false} end`,
          user_name: eb
            .case()
            .when('normalized_user_name', '=', eb.ref('normalized_email'))
            .then(email)
            .else(eb.ref('user_name'))
            .end(),
          normalized_user_name: eb
            .case()
            .when('normalized_user_name', '=', eb.ref('normalized_email'))
            .then(normalize(email))
            .else(eb.ref('normalized_user_name'))
            .end(),
        }),
        ...(email === undefined && emailConfirmed !== undefined && { email_confirmed: emailConfirmed }),
        updated_at: new Date(),
      }))
      .where('id', '=', userId)
      .returning(PROFILE_COLUMNS)
      .executeTakeFirst();
    return row && toProfile(row);
  } catch (error) {
    if (isUniqueViolation(error))
      throw new DuplicateUserError(`e-mail ${email}: another user holds it (as its e-mail or user name)`);
    throw error;
  }
}
