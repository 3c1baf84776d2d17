import { pathParam, type Operations } from '../platform/http/operations';
import { z } from 'zod';
import type { Db } from '../platform/store/database';
import {
  deleteGroup,
  DuplicateGroupError,
  findGroup,
  listGroups,
  saveGroup,
  UnknownMembersError,
  scimGroupConditions,
  type GroupFilter,
  type GroupMember,
  type GroupRow,
} from './store/scim-groups';
import type { Database } from '../platform/store/schema';
import { describeIssues } from '../platform/http/problem';
import { ScimError } from './scim-errors';
import { scimFilterToSql, type AttributeMap } from './filter';
import { resourceReads } from './resource-reads';
import { checkIfMatch, GROUP_SCHEMA, meta, uniqueName } from './resource-shapes';
import { applyPatch } from './patch';
import { GROUP_RESOURCE_SCHEMA } from './published-schemas';

/** The SCIM attributes a group filter may compare (lower-cased paths), each with its condition in the store. */
const groupAttributes: AttributeMap<Database, 'scim_groups'> = {
  id: scimGroupConditions.id,
  displayname: scimGroupConditions.displayName,
  externalid: scimGroupConditions.externalId,
};

/** A member as RFC 7643 §4.2 has it; each is kept as sent. Entra sends `$ref: null`. */
const memberSchema = z.looseObject({
  value: z.string().min(1).max(256),
  display: z.string().max(256).nullish(),
  type: z.string().max(64).nullish(),
  $ref: z.string().max(2048).nullish(),
});

export const groupInputSchema = z.looseObject({
  displayName: uniqueName,
  // Kept as sent: it is the client's own identifier, compared exactly (caseExact in /Schemas).
  externalId: z.string().max(256).nullish(),
  members: z.array(memberSchema).nullish(),
});

/**
 * The members as stored. Only users are members (/Schemas says so: type User); a `$ref` must name the member's own
 * user, so what the answer carries is never at odds with `value`.
 */
function membersOf(members: z.infer<typeof memberSchema>[]): GroupMember[] {
  return members.map((m, i) => {
    if (m.type != null && m.type.toLowerCase() !== 'user')
      throw new ScimError(
        400,
        `members[${i}].type: only users are members of a group here (type User; see /Schemas)`,
        'invalidValue',
      );
    if (m.$ref != null && !m.$ref.endsWith(`Users/${m.value}`))
      throw new ScimError(
        400,
        `members[${i}].$ref: must be the URI of the user ${m.value} (…/Users/${m.value})`,
        'invalidValue',
      );
    return {
      value: m.value,
      ...(m.display == null ? {} : { display: m.display }),
      ...(m.type == null ? {} : { type: m.type }),
      ...(m.$ref == null ? {} : { $ref: m.$ref }),
    };
  });
}

function groupResource(row: GroupRow, groupsUrl: string) {
  return {
    schemas: [GROUP_SCHEMA],
    id: row.id,
    ...(row.external_id ? { externalId: row.external_id } : {}),
    displayName: row.display_name,
    members: row.members,
    meta: meta('Group', `${groupsUrl}/${row.id}`, row.created_at, row.updated_at),
  };
}

export function scimGroupsOperations({ db, scimUrl }: { db: Db; scimUrl: string }): Operations {
  const groupsUrl = `${scimUrl}/Groups`;

  const { load, send, reads } = resourceReads<GroupRow, GroupFilter>({
    noun: 'group',
    find: (id) => findGroup(db, id),
    list: (where, startIndex, count) => listGroups(db, where, startIndex, count),
    filterToSql: (filter) => scimFilterToSql(filter, groupAttributes),
    resource: (row) => groupResource(row, groupsUrl),
  });

  async function save(body: unknown, id?: string): Promise<GroupRow> {
    const parsed = groupInputSchema.safeParse(body);
    if (!parsed.success) throw new ScimError(400, describeIssues(parsed.error), 'invalidValue');
    try {
      const groupId = await saveGroup(
        db,
        {
          displayName: parsed.data.displayName,
          externalId: parsed.data.externalId ?? null,
          members: membersOf(parsed.data.members ?? []),
        },
        id,
      );
      return load(groupId);
    } catch (error) {
      if (error instanceof DuplicateGroupError) throw new ScimError(409, error.message, 'uniqueness');
      if (error instanceof UnknownMembersError) throw new ScimError(400, `members: ${error.message}`, 'invalidValue');
      throw error;
    }
  }

  return {
    ...reads,
    createScimGroup: async (req, res) => send(res, await save(req.body), 201),
    replaceScimGroup: async (req, res) => {
      checkIfMatch(req, (await load(pathParam(req, 'id'))).updated_at, 'group');
      send(res, await save(req.body, pathParam(req, 'id')));
    },
    modifyScimGroup: async (req, res) => {
      const row = await load(pathParam(req, 'id'));
      checkIfMatch(req, row.updated_at, 'group');
      send(res, await save(applyPatch(groupResource(row, groupsUrl), req.body, GROUP_RESOURCE_SCHEMA), row.id));
    },
    deleteScimGroup: async (req, res) => {
      checkIfMatch(req, (await load(pathParam(req, 'id'))).updated_at, 'group');
      await deleteGroup(db, pathParam(req, 'id'));
      res.status(204).end();
    },
  };
}
