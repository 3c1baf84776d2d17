import { base32Decode } from '../../../security/base32';
import { ApplicationFailure } from '@temporalio/activity';
import { createHmac } from 'node:crypto';
import { sql, type RawBuilder } from 'kysely';
import { insertSkippingExisting } from '../../../store/insert-new';
import { protectSecret } from '../../../security/data-protection';
import { JSON_ROWS, jsonRows } from '../../../store/json-rows';
import { normalize, userExists } from '../../../store/users';
import { uuidV5 } from '../identifiers';
import { countWrites, emptyPage, nextCursor, type PageResult, type Pass, type PassContext } from '../types';
import { ofUserPage, parseUserCursor, readUserIds } from '../user-pages';

/**
 * The users this run writes child rows for: all that exist under Upsert, only its own under CreateOnly. Under
 * CreateOnly a user that existed before the run is left as it is, children included (after cutover its roles, logins
 * and MFA are the service's).
 */
const writableUser = (ctx: PassContext, userId: RawBuilder<unknown>) =>
  userExists(userId, ctx.options.usersMode === 'CreateOnly' ? ctx.options.version : undefined);

/** Whether the run writes for any user of the page; stops at the first that it does. */
async function anyWritableUser(ctx: PassContext, ids: string[]): Promise<boolean> {
  const found =
    await sql`select from unnest(${ids}::text[]) as p(id) where ${writableUser(ctx, sql.ref('p.id'))} limit 1`.execute(
      ctx.target,
    );
  return found.rows.length > 0;
}

/** A page of child rows to insert, keeping those of writable users only (see writableUser). */
function rowsOfWritableUsers<T extends 'user_roles' | 'user_logins' | 'mfa_credentials', C extends string>(
  ctx: PassContext,
  table: T,
  columns: readonly C[],
  rows: ReadonlyArray<Record<C, unknown>>,
) {
  return sql`${jsonRows(table, columns, rows)} where ${writableUser(ctx, sql.ref(`${JSON_ROWS}.user_id`))}`;
}

/** Inserts a page of child rows of writable users, skipping those a unique key holds already; counts both. */
async function insertChildren<C extends string>(
  ctx: PassContext,
  page: PageResult,
  table: 'user_roles' | 'user_logins',
  columns: readonly C[],
  rows: ReadonlyArray<Record<C, unknown>>,
): Promise<PageResult> {
  if (rows.length === 0) return page;
  const insert = ctx.target
    .insertInto(table)
    .columns(columns as never)
    .expression(rowsOfWritableUsers(ctx, table, columns, rows));
  countWrites(page, rows.length, await insertSkippingExisting(insert));
  return page;
}

/**
 * One page of a child pass (user-roles, logins, MFA), over a page of source users: unless the run writes for none
 * of them (an unchanged re-run under CreateOnly: one index read per user, and the source's child rows are not read),
 * the page's child rows from the source, by UserId range. The insert keeps those of writable users and lets unique
 * keys skip what the target holds already; the rest count as skipped. Users the run skipped are reported by the
 * users pass.
 */
async function childPage<C extends { UserId: string }>(
  ctx: PassContext,
  cursor: string | null,
  until: string | null,
  readChildren: (after: string | null, last: string) => Promise<C[]>,
) {
  const after = parseUserCursor(cursor);
  const ids = await readUserIds(ctx.source, { after, until }, ctx.options.pageSize);
  const page = { ...emptyPage(), next: nextCursor(ids, ctx.options.pageSize, (id) => id) };
  if (ids.length === 0 || (!ctx.options.dryRun && !(await anyWritableUser(ctx, ids))))
    return { page, children: [] as C[] };
  const children = await readChildren(after, ids[ids.length - 1]);
  page.read = children.length;
  return { page, children: ctx.options.dryRun ? [] : children };
}

/** AspNetUserRoles → user_roles through a role id → name map, so a source role that matched an existing role by name still resolves. */
export const userRolesPass: Pass = async (ctx, cursor, until) => {
  const { page, children: links } = await childPage(ctx, cursor, until, (after, last) =>
    ofUserPage(ctx.source.selectFrom('AspNetUserRoles').select(['UserId', 'RoleId']), after, last).execute(),
  );
  if (links.length === 0) return page;
  const sourceRoles = await ctx.source
    .selectFrom('AspNetRoles')
    .select(['Id', 'Name'])
    .where('Id', 'in', [...new Set(links.map((l) => l.RoleId))])
    .execute();
  const nameById = new Map(sourceRoles.map((r) => [r.Id, r.Name ? normalize(r.Name) : undefined]));
  const names = [...new Set([...nameById.values()].filter((n): n is string => !!n))];
  const targetRoles = names.length
    ? await ctx.target
        .selectFrom('roles')
        .select(['id', 'normalized_name'])
        .where('normalized_name', 'in', names)
        .execute()
    : [];
  const roleIdByName = new Map(targetRoles.map((r) => [r.normalized_name, r.id]));
  const rows: Array<{ user_id: string; role_id: string }> = [];
  for (const link of links) {
    const roleId = roleIdByName.get(nameById.get(link.RoleId) ?? '');
    if (!roleId) {
      page.skipped++;
      page.warnings.push(`role assignment ${link.UserId} → ${link.RoleId} skipped: the role was not migrated`);
    } else rows.push({ user_id: link.UserId, role_id: roleId });
  }
  return insertChildren(ctx, page, 'user_roles', ['user_id', 'role_id'], rows);
};

/** AspNetUserLogins → user_logins; a login that exists already (the spec's 409) is skipped, not an error. */
export const loginsPass: Pass = async (ctx, cursor, until) => {
  const { page, children: logins } = await childPage(ctx, cursor, until, (after, last) =>
    ofUserPage(
      ctx.source
        .selectFrom('AspNetUserLogins')
        .select(['LoginProvider', 'ProviderKey', 'ProviderDisplayName', 'UserId']),
      after,
      last,
    ).execute(),
  );
  const rows = logins.map((l) => ({
    login_provider: l.LoginProvider,
    provider_key: l.ProviderKey,
    provider_display_name: l.ProviderDisplayName,
    user_id: l.UserId,
  }));
  return insertChildren(
    ctx,
    page,
    'user_logins',
    ['login_provider', 'provider_key', 'provider_display_name', 'user_id'],
    rows,
  );
};

/** ASP.NET Identity's authenticator key and recovery codes, the MFA credentials the mfa pass migrates. */
export const mfaTokens = (source: PassContext['source']) =>
  source
    .selectFrom('AspNetUserTokens')
    .where('LoginProvider', '=', '[AspNetUserStore]')
    .where('Name', 'in', ['AuthenticatorKey', 'RecoveryCodes']);

/** AspNetUserTokens (AuthenticatorKey, RecoveryCodes) → mfa_credentials with deterministic ids; users who already have MFA are skipped. */
export const mfaPass: Pass = async (ctx, cursor, until) => {
  const ring = ctx.dataProtection;
  if (!ring && !ctx.options.dryRun)
    throw ApplicationFailure.nonRetryable(
      'DataProtection:Keys (or DataProtection:Key) is required to migrate MFA credentials',
      'MissingDataProtectionKey',
    );
  const { page, children: tokens } = await childPage(ctx, cursor, until, (after, last) =>
    ofUserPage(mfaTokens(ctx.source).select(['UserId', 'Name', 'Value']), after, last).execute(),
  );
  const rows: Array<{ id: string; user_id: string; kind: 'totp' | 'recovery-code'; label: string; secret: string }> =
    [];
  for (const token of tokens) {
    if (!token.Value) {
      page.skipped++;
      continue;
    }
    if (token.Name === 'AuthenticatorKey') {
      try {
        rows.push({
          id: uuidV5(`${token.UserId}:source-totp`),
          user_id: token.UserId,
          kind: 'totp',
          label: 'source-totp',
          secret: protectSecret(base32Decode(token.Value), ring!),
        });
      } catch {
        page.skipped++;
        page.warnings.push(`authenticator key of user ${token.UserId} is not base32 and was skipped`);
      }
    } else {
      token.Value.split(';')
        .map((c) => c.trim())
        .filter(Boolean)
        .forEach((code, index) => {
          const label = `source-rc-${index + 1}`;
          rows.push({
            id: uuidV5(`${token.UserId}:${label}`),
            user_id: token.UserId,
            kind: 'recovery-code',
            label,
            secret: createHmac('sha256', ring!.primary.key).update(code).digest('base64'),
          });
        });
    }
  }
  if (rows.length === 0) return page;
  const columns = ['id', 'user_id', 'kind', 'label', 'secret'] as const;
  // Any MFA the user holds already, enrolled in the service or migrated earlier, means the user is skipped.
  const notEnrolled = sql`${rowsOfWritableUsers(ctx, 'mfa_credentials', columns, rows)} and not exists (select from mfa_credentials m where m.user_id = ${sql.ref(`${JSON_ROWS}.user_id`)} offset 0)`;
  countWrites(
    page,
    rows.length,
    await insertSkippingExisting(ctx.target.insertInto('mfa_credentials').columns(columns).expression(notEnrolled)),
  );
  return page;
};
