import { base32Decode } from '../../../platform/security/base32';
import { ApplicationFailure } from '@temporalio/activity';
import { insertUsersSkippingHeld } from '../../store/migrated-users';
import { withoutCommitting } from '../../store/uncommitted';
import { usersADryRunWouldWrite } from './users';
import { rolesPass } from './roles';
import { createHmac } from 'node:crypto';
import { protectSecret } from '../../../platform/security/data-protection';
import {
  anyWritableUser,
  insertMfaCredentials,
  insertUserChildren,
  roleIdsByName,
  type MigratedMfaCredential,
} from '../../store/migrated-user-children';
import { normalize } from '../../../platform/store/users';
import { uuidV5 } from '../../../platform/security/name-based-uuid';
import { countWrites, emptyPage, nextCursor, type PageResult, type Pass, type PassContext } from '../types';
import {
  parseUserCursor,
  readMfaTokens,
  readRoleNames,
  readUserIds,
  readUserLogins,
  readUserRoles,
} from '../../source/user-reads';

/**
 * The users this run writes child rows for: all that exist under Upsert, only its own under CreateOnly (see
 * platform/store/migrated-user-children.ts).
 */
const createdBy = (ctx: PassContext) => (ctx.options.usersMode === 'CreateOnly' ? ctx.options.version : undefined);

/** Inserts a page of child rows of writable users, skipping those a unique key holds already; counts both. */
async function insertChildren<C extends string>(
  ctx: PassContext,
  page: PageResult,
  table: 'user_roles' | 'user_logins',
  columns: readonly C[],
  rows: ReadonlyArray<Record<C, unknown>>,
): Promise<PageResult> {
  if (rows.length === 0) return page;
  countWrites(page, rows.length, await insertUserChildren(ctx.target, table, columns, rows, createdBy(ctx)));
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
  if (ids.length === 0 || !(await anyWritableUser(ctx.target, ids, createdBy(ctx))))
    return { page, children: [] as C[] };
  const children = await readChildren(after, ids[ids.length - 1]);
  page.read = children.length;
  return { page, children };
}

/**
 * A child pass's page in a dry run: the real run writes for the users it created (under CreateOnly) or for all that
 * exist (Upsert), which a dry run never writes. So the page runs as the real run's in a transaction that is rolled
 * back, holding first the users the dry run's users pass would write for the same key range (the survivors of its
 * simulation, so users it would skip stay out): reading these from the source again, rather than passing them on
 * from the users pass, keeps the workflow as it is and is right for any partitioning, as both passes page alike.
 * Users that exist already are left as they are; the counts are the real run's, and nothing is kept.
 */
const dryRunnable =
  (pass: Pass, prepare?: (ctx: PassContext) => Promise<void>): Pass =>
  async (ctx, cursor, until) => {
    if (!ctx.options.dryRun) return pass(ctx, cursor, until);
    const users = await usersADryRunWouldWrite(ctx, cursor, until);
    return withoutCommitting(ctx.target, async (target) => {
      if (users.length > 0) await insertUsersSkippingHeld(target, users);
      await prepare?.({ ...ctx, target, options: { ...ctx.options, dryRun: false } });
      return pass({ ...ctx, target }, cursor, until);
    });
  };

/** The roles the real run's roles pass writes before user-roles starts, written again into a dry run's transaction. */
async function writeRoles(ctx: PassContext): Promise<void> {
  let cursor: string | null = null;
  do cursor = (await rolesPass(ctx, cursor, null)).next;
  while (cursor !== null);
}

/** AspNetUserRoles → user_roles through a role id → name map, so a source role that matched an existing role by name still resolves. */
export const userRolesPass: Pass = dryRunnable(async (ctx, cursor, until) => {
  const { page, children: links } = await childPage(ctx, cursor, until, (after, last) =>
    readUserRoles(ctx.source, after, last),
  );
  if (links.length === 0) return page;
  const sourceRoles = await readRoleNames(ctx.source, [...new Set(links.map((l) => l.RoleId))]);
  const nameById = new Map(sourceRoles.map((r) => [r.Id, r.Name ? normalize(r.Name) : undefined]));
  const names = [...new Set([...nameById.values()].filter((n): n is string => !!n))];
  const roleIdByName = await roleIdsByName(ctx.target, names);
  const rows: Array<{ user_id: string; role_id: string }> = [];
  for (const link of links) {
    const roleId = roleIdByName.get(nameById.get(link.RoleId) ?? '');
    if (!roleId) {
      page.skipped++;
      page.warnings.push(`role assignment ${link.UserId} → ${link.RoleId} skipped: the role was not migrated`);
    } else rows.push({ user_id: link.UserId, role_id: roleId });
  }
  return insertChildren(ctx, page, 'user_roles', ['user_id', 'role_id'], rows);
}, writeRoles);

/** AspNetUserLogins → user_logins; a login that exists already (the spec's 409) is skipped, not an error. */
export const loginsPass: Pass = dryRunnable(async (ctx, cursor, until) => {
  const { page, children: logins } = await childPage(ctx, cursor, until, (after, last) =>
    readUserLogins(ctx.source, after, last),
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
});

/** AspNetUserTokens (AuthenticatorKey, RecoveryCodes) → mfa_credentials with deterministic ids; users who already have MFA are skipped. */
export const mfaPass: Pass = dryRunnable(async (ctx, cursor, until) => {
  const ring = ctx.dataProtection;
  if (!ring && !ctx.options.dryRun)
    throw ApplicationFailure.nonRetryable(
      'DataProtection:Keys (or DataProtection:Key) is required to migrate MFA credentials',
      'MissingDataProtectionKey',
    );
  const { page, children: tokens } = await childPage(ctx, cursor, until, (after, last) =>
    readMfaTokens(ctx.source, after, last),
  );
  // A dry run without the key ring still counts what it would write; its rows are rolled back (dryRunnable).
  const seal = (secret: Buffer) => (ring ? protectSecret(secret, ring) : '');
  const hashCode = (code: string) => (ring ? createHmac('sha256', ring.primary.key).update(code).digest('base64') : '');
  const rows: MigratedMfaCredential[] = [];
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
          secret: seal(base32Decode(token.Value)),
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
            secret: hashCode(code),
          });
        });
    }
  }
  if (rows.length === 0) return page;
  countWrites(page, rows.length, await insertMfaCredentials(ctx.target, rows, createdBy(ctx)));
  return page;
});
