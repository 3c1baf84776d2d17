import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely';
import type { Db } from '../../platform/store/database';
import type { Database, ScimEmail, ScimManager, ScimName } from '../../platform/store/schema';
import { DuplicateUserError, normalize } from '../../platform/store/users';
import { isUniqueViolation } from '../../platform/store/errors';
import { scimPage } from './scim-page';
import { updatedAny } from '../../platform/store/row-counts';

export const SCIM_USER_COLUMNS = [
  'id',
  'user_name',
  'email',
  'first_name',
  'last_name',
  'external_id',
  'custom_attributes',
  'scim_emails',
  'scim_name',
  'scim_manager',
  'active',
  'created_at',
  'updated_at',
] as const;

export type UserFilter = (eb: ExpressionBuilder<Database, 'users'>) => Expression<SqlBool>;

/** A user deleted through SCIM is no SCIM resource any more (RFC 7644 §3.6): not found, not listed. */
export async function findScimUser(db: Db, id: string) {
  return db
    .selectFrom('users')
    .select(SCIM_USER_COLUMNS)
    .where('id', '=', id)
    .where('scim_deleted_at', 'is', null)
    .executeTakeFirst();
}

export type ScimUserRow = NonNullable<Awaited<ReturnType<typeof findScimUser>>>;

/** One page (startIndex is 1-based, as in SCIM) and the total count of matches. */
export async function listScimUsers(db: Db, filter: UserFilter | undefined, startIndex: number, count: number) {
  let query = db.selectFrom('users').where('scim_deleted_at', 'is', null);
  if (filter) query = query.where(filter);
  return scimPage(query, query.select(SCIM_USER_COLUMNS), startIndex, count);
}

export interface ScimUserChanges {
  userName: string;
  email: string;
  firstName: string | null;
  lastName: string | null;
  externalId: string | null;
  customAttributes: Record<string, string>;
  emails: ScimEmail[];
  /** The name as sent (givenName and familyName are also firstName and lastName); null: none. */
  name: ScimName | null;
  manager: ScimManager | null;
  /** A new native hash when the client sent a password; the stored one is kept otherwise. */
  passwordHash?: string;
}

export async function updateScimUser(db: Db, id: string, changes: ScimUserChanges): Promise<void> {
  try {
    await db
      .updateTable('users')
      .set({
        user_name: changes.userName,
        normalized_user_name: normalize(changes.userName),
        email: changes.email,
        normalized_email: normalize(changes.email),
        first_name: changes.firstName,
        last_name: changes.lastName,
        external_id: changes.externalId,
        custom_attributes: JSON.stringify(changes.customAttributes),
        scim_emails: JSON.stringify(changes.emails),
        scim_name: changes.name && JSON.stringify(changes.name),
        scim_manager: changes.manager && JSON.stringify(changes.manager),
        ...(changes.passwordHash ? { password_hash: changes.passwordHash, password_format: 'aspnet-v3' } : {}),
        updated_at: new Date(),
      })
      .where('id', '=', id)
      .execute();
  } catch (error) {
    if (isUniqueViolation(error))
      throw new DuplicateUserError(`userName ${changes.userName} or e-mail ${changes.email} belongs to another user`);
    throw error;
  }
}

/** What a SCIM client sent for a user it just created beyond what the creation itself stores. */
export async function setScimAttributes(
  db: Db,
  id: string,
  sent: { emails: ScimEmail[]; name: ScimName | null; manager: ScimManager | null },
): Promise<void> {
  await db
    .updateTable('users')
    .set({
      scim_emails: JSON.stringify(sent.emails),
      scim_name: sent.name && JSON.stringify(sent.name),
      scim_manager: sent.manager && JSON.stringify(sent.manager),
    })
    .where('id', '=', id)
    .execute();
}

/**
 * RFC 7644 §3.6: the user is no SCIM resource any more, and leaves every SCIM group (whose version moves on). The
 * record stays for audit and the admin API. False when it was deleted already (of two parallel DELETEs, one wins).
 */
export async function markScimDeleted(db: Db, id: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const marked = await trx
      .updateTable('users')
      .set({ scim_deleted_at: new Date(), updated_at: new Date() })
      .where('id', '=', id)
      .where('scim_deleted_at', 'is', null)
      .executeTakeFirst();
    if (!updatedAny(marked)) return false;
    const left = await trx.deleteFrom('scim_group_members').where('user_id', '=', id).returning('group_id').execute();
    if (left.length > 0)
      await trx
        .updateTable('scim_groups')
        .set({ updated_at: new Date() })
        .where(
          'id',
          'in',
          left.map((m) => m.group_id),
        )
        .execute();
    return true;
  });
}

/** The user deleted through SCIM, other than `self`, whose record holds this userName or e-mail, if one does. */
export async function scimDeletedHolder(
  db: Db,
  self: string,
  userName: string,
  email: string,
): Promise<string | undefined> {
  const row = await db
    .selectFrom('users')
    .select('id')
    .where('id', '<>', self)
    .where('scim_deleted_at', 'is not', null)
    .where((eb) =>
      eb.or([eb('normalized_user_name', '=', normalize(userName)), eb('normalized_email', '=', normalize(email))]),
    )
    .executeTakeFirst();
  return row?.id;
}

/** Whether the user was deleted through SCIM (its userName and e-mail stay taken by its kept record). */
export async function isScimDeleted(db: Db, id: string): Promise<boolean> {
  const row = await db.selectFrom('users').select('scim_deleted_at').where('id', '=', id).executeTakeFirst();
  return !!row?.scim_deleted_at;
}

/** A value a SCIM filter compares with (`eq`): a string, number, boolean or null, as the filter wrote it. */
export type FilterValue = string | number | boolean | null;
/** One filter comparison's SQL on the users table. */
export type UserCondition = (eb: ExpressionBuilder<Database, 'users'>, value: FilterValue) => Expression<SqlBool>;

/** The sign-in e-mail or any e-mail a SCIM client sent. */
const anyEmail: UserCondition = (eb, v) =>
  eb.or([
    eb('normalized_email', '=', normalize(String(v))),
    sql<boolean>`exists (select from jsonb_array_elements(scim_emails) e where lower(e->>'value') = lower(${String(v)}))`,
  ]);

/**
 * The SQL of SCIM filters on users, for the SCIM layer's attribute map (which names the SCIM attribute each answers):
 * the ids, the user name and the names; the sign-in e-mail or any e-mail a SCIM client sent; an e-mail type (a user
 * without SCIM e-mails has its sign-in e-mail as the work one) and a primary e-mail, each matched on its own (a value
 * path's conditions may meet in different e-mails). Custom attributes: customAttributeCondition.
 */
export const scimUserConditions = {
  id: (eb, v) => eb('id', '=', String(v)),
  userName: (eb, v) => eb('normalized_user_name', '=', normalize(String(v))),
  externalId: (eb, v) => eb('external_id', '=', String(v)),
  anyEmail,
  emailType: (_eb, v) =>
    sql<boolean>`(case when scim_emails is null then lower(${String(v)}) = 'work' else exists (select from jsonb_array_elements(scim_emails) e where lower(e->>'type') = lower(${String(v)})) end)`,
  /** Only `primary eq true` matches anything. */
  primaryEmail: (_eb, v) =>
    v === true
      ? sql<boolean>`(scim_emails is null or exists (select from jsonb_array_elements(scim_emails) e where (e->>'primary')::boolean))`
      : sql<boolean>`false`,
  active: (eb, v) => eb('active', '=', v === true || String(v).toLowerCase() === 'true'),
  givenName: (eb, v) => eb('first_name', '=', String(v)),
  familyName: (eb, v) => eb('last_name', '=', String(v)),
} satisfies Record<string, UserCondition>;

/** A custom attribute's value (the enterprise extension's attributes are kept as custom attributes). */
export const customAttributeCondition =
  (name: string): UserCondition =>
  (eb, v) =>
    eb(sql`custom_attributes->>${name}`, '=', String(v));
