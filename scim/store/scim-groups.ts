import { randomUUID } from 'node:crypto';
import type { Expression, ExpressionBuilder, SqlBool } from 'kysely';
import type { Db } from '../../platform/store/database';
import type { Database } from '../../platform/store/schema';
import { normalize } from '../../platform/store/users';
import { isUniqueViolation } from '../../platform/store/errors';
import { scimPage } from './scim-page';
import { deletedAny } from '../../platform/store/row-counts';

export type GroupFilter = (eb: ExpressionBuilder<Database, 'scim_groups'>) => Expression<SqlBool>;
/** One SCIM filter comparison's SQL on the groups table; the SCIM layer's attribute map names the attribute each answers. */
export type GroupCondition = (
  eb: ExpressionBuilder<Database, 'scim_groups'>,
  value: string | number | boolean | null,
) => Expression<SqlBool>;

export const scimGroupConditions = {
  id: (eb, v) => eb('id', '=', String(v)),
  displayName: (eb, v) => eb('normalized_display_name', '=', normalize(String(v))),
  externalId: (eb, v) => eb('external_id', '=', String(v)),
} satisfies Record<string, GroupCondition>;

/** A member as the client sent it (RFC 7643 §4.2): the user's id and what it said beside it. */
export interface GroupMember {
  value: string;
  display?: string;
  type?: string;
  $ref?: string;
}

export interface GroupData {
  displayName: string;
  externalId: string | null;
  /** In the client's order; a repeated value counts once, where it first came. */
  members: GroupMember[];
}

export class DuplicateGroupError extends Error {}
export class UnknownMembersError extends Error {
  constructor(readonly userIds: string[]) {
    super(`no users with ids ${userIds.join(', ')}`);
  }
}

const GROUP_COLUMNS = ['id', 'display_name', 'external_id', 'created_at', 'updated_at'] as const;

async function withMembers(
  db: Db,
  rows: Array<{ id: string; display_name: string; external_id: string | null; created_at: Date; updated_at: Date }>,
) {
  if (rows.length === 0) return [];
  const members = await db
    .selectFrom('scim_group_members')
    .innerJoin('users', 'users.id', 'scim_group_members.user_id')
    .select([
      'scim_group_members.group_id',
      'users.id',
      'scim_group_members.display',
      'scim_group_members.type',
      'scim_group_members.ref',
    ])
    .where(
      'scim_group_members.group_id',
      'in',
      rows.map((r) => r.id),
    )
    // A user deleted through SCIM is no resource, so no member either (markScimDeleted also takes it out).
    .where('users.scim_deleted_at', 'is', null)
    .orderBy('scim_group_members.position')
    .orderBy('users.id')
    .execute();
  return rows.map((row) => ({
    ...row,
    members: members
      .filter((m) => m.group_id === row.id)
      .map((m): GroupMember => ({
        value: m.id,
        ...(m.display === null ? {} : { display: m.display }),
        ...(m.type === null ? {} : { type: m.type }),
        ...(m.ref === null ? {} : { $ref: m.ref }),
      })),
  }));
}

export type GroupRow = Awaited<ReturnType<typeof withMembers>>[number];

export async function findGroup(db: Db, id: string): Promise<GroupRow | undefined> {
  const row = await db.selectFrom('scim_groups').select(GROUP_COLUMNS).where('id', '=', id).executeTakeFirst();
  return row && (await withMembers(db, [row]))[0];
}

export async function listGroups(db: Db, filter: GroupFilter | undefined, startIndex: number, count: number) {
  let query = db.selectFrom('scim_groups');
  if (filter) query = query.where(filter);
  const { total, rows } = await scimPage(query, query.select(GROUP_COLUMNS), startIndex, count);
  return { total, rows: await withMembers(db, rows) };
}

/** Creates (no id) or replaces a group with exactly these members, in one transaction. */
export async function saveGroup(db: Db, data: GroupData, id?: string): Promise<string> {
  const members = data.members.filter((m, i) => data.members.findIndex((other) => other.value === m.value) === i);
  const memberIds = members.map((m) => m.value);
  try {
    return await db.transaction().execute(async (trx) => {
      if (memberIds.length > 0) {
        const found = await trx
          .selectFrom('users')
          .select('id')
          .where('id', 'in', memberIds)
          .where('scim_deleted_at', 'is', null)
          .execute();
        const missing = memberIds.filter((m) => !found.some((f) => f.id === m));
        if (missing.length > 0) throw new UnknownMembersError(missing);
      }
      const values = {
        display_name: data.displayName,
        normalized_display_name: normalize(data.displayName),
        external_id: data.externalId,
      };
      const groupId = id ?? randomUUID();
      if (id)
        await trx
          .updateTable('scim_groups')
          .set({ ...values, updated_at: new Date() })
          .where('id', '=', id)
          .execute();
      else
        await trx
          .insertInto('scim_groups')
          .values({ id: groupId, ...values })
          .execute();
      await trx.deleteFrom('scim_group_members').where('group_id', '=', groupId).execute();
      if (memberIds.length > 0) {
        await trx
          .insertInto('scim_group_members')
          .values(
            members.map((m, position) => ({
              group_id: groupId,
              user_id: m.value,
              position,
              display: m.display ?? null,
              type: m.type ?? null,
              ref: m.$ref ?? null,
            })),
          )
          .execute();
      }
      return groupId;
    });
  } catch (error) {
    if (isUniqueViolation(error)) throw new DuplicateGroupError(`a group named ${data.displayName} exists already`);
    throw error;
  }
}

export async function deleteGroup(db: Db, id: string): Promise<boolean> {
  return deletedAny(await db.deleteFrom('scim_groups').where('id', '=', id).executeTakeFirst());
}
