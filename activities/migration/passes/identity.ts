import { createHmac } from 'node:crypto';
import { protectSecret } from '../../../security/data-protection';
import { normalize } from '../../../store/users';
import { uuidV5 } from '../identifiers';
import { emptyPage, nextCursor, type Pass, type PageResult } from '../types';

async function existingUserIds(ctx: Parameters<Pass>[0], ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await ctx.target.selectFrom('users').select('id').where('id', 'in', [...new Set(ids)]).execute();
  return new Set(rows.map((r) => r.id));
}

function count(page: PageResult, attempted: number, written: number): void {
  page.created += written;
  page.skipped += attempted - written;
}

/** AspNetRoles → roles, ids verbatim; a role whose name exists already is skipped (assignments resolve by name). */
export const rolesPass: Pass = async (ctx, cursor) => {
  let query = ctx.source.selectFrom('AspNetRoles').select(['Id', 'Name', 'NormalizedName']).orderBy('Id').offset(0).fetch(ctx.options.pageSize);
  if (cursor) query = query.where('Id', '>', JSON.parse(cursor));
  const roles = await query.execute();
  const page = { ...emptyPage(), read: roles.length, next: nextCursor(roles, ctx.options.pageSize, (r) => r.Id) };
  const rows = roles.filter((r) => r.Name).map((r) => ({ id: r.Id, name: r.Name!, normalized_name: normalize(r.NormalizedName ?? r.Name!) }));
  page.skipped += roles.length - rows.length;
  if (rows.length === 0 || ctx.options.dryRun) return page;
  const written = await ctx.target.insertInto('roles').values(rows).onConflict((oc) => oc.doNothing()).returning('id').execute();
  count(page, rows.length, written.length);
  return page;
};

/** AspNetUserRoles → user_roles through a role id → name map, so a source role that matched an existing role by name still resolves. */
export const userRolesPass: Pass = async (ctx, cursor) => {
  let query = ctx.source.selectFrom('AspNetUserRoles').select(['UserId', 'RoleId']).orderBy('UserId').orderBy('RoleId').offset(0).fetch(ctx.options.pageSize);
  if (cursor) {
    const [userId, roleId] = JSON.parse(cursor) as [string, string];
    // The redundant leading `>=` turns the composite keyset into an index range scan (an OR alone scans from the start).
    query = query.where('UserId', '>=', userId).where((eb) => eb.or([eb('UserId', '>', userId), eb('RoleId', '>', roleId)]));
  }
  const read = await query.execute();
  const page = { ...emptyPage(), read: read.length, next: nextCursor(read, ctx.options.pageSize, (l) => [l.UserId, l.RoleId]) };
  if (read.length === 0 || ctx.options.dryRun) return page;
  // A delta sweep finds most links in place already: those are skipped before any role lookup.
  const present = await ctx.target.selectFrom('user_roles').select(['user_id', 'role_id']).where('user_id', 'in', [...new Set(read.map((l) => l.UserId))]).execute();
  const presentKeys = new Set(present.map((p) => `${p.user_id}\u0000${p.role_id}`));
  const links = read.filter((l) => !presentKeys.has(`${l.UserId}\u0000${l.RoleId}`));
  page.skipped += read.length - links.length;
  if (links.length === 0) return page;
  const sourceRoles = await ctx.source.selectFrom('AspNetRoles').select(['Id', 'Name']).where('Id', 'in', [...new Set(links.map((l) => l.RoleId))]).execute();
  const nameById = new Map(sourceRoles.map((r) => [r.Id, r.Name ? normalize(r.Name) : undefined]));
  const names = [...new Set([...nameById.values()].filter((n): n is string => !!n))];
  const targetRoles = names.length ? await ctx.target.selectFrom('roles').select(['id', 'normalized_name']).where('normalized_name', 'in', names).execute() : [];
  const roleIdByName = new Map(targetRoles.map((r) => [r.normalized_name, r.id]));
  const users = await existingUserIds(ctx, links.map((l) => l.UserId));
  const rows = [];
  for (const link of links) {
    const roleId = roleIdByName.get(nameById.get(link.RoleId) ?? '');
    if (!roleId || !users.has(link.UserId)) {
      page.skipped++;
      page.warnings.push(`role assignment ${link.UserId} → ${link.RoleId} skipped: ${roleId ? 'the user was not migrated' : 'the role was not migrated'}`);
    } else rows.push({ user_id: link.UserId, role_id: roleId });
  }
  if (rows.length === 0) return page;
  const written = await ctx.target.insertInto('user_roles').values(rows).onConflict((oc) => oc.doNothing()).returning('user_id').execute();
  count(page, rows.length, written.length);
  return page;
};

/** AspNetUserLogins → user_logins; a login that exists already (the spec's 409) is skipped, not an error. */
export const loginsPass: Pass = async (ctx, cursor) => {
  let query = ctx.source.selectFrom('AspNetUserLogins').select(['LoginProvider', 'ProviderKey', 'ProviderDisplayName', 'UserId']).orderBy('LoginProvider').orderBy('ProviderKey').offset(0).fetch(ctx.options.pageSize);
  if (cursor) {
    const [provider, key] = JSON.parse(cursor) as [string, string];
    query = query.where('LoginProvider', '>=', provider).where((eb) => eb.or([eb('LoginProvider', '>', provider), eb('ProviderKey', '>', key)]));
  }
  const read = await query.execute();
  const page = { ...emptyPage(), read: read.length, next: nextCursor(read, ctx.options.pageSize, (l) => [l.LoginProvider, l.ProviderKey]) };
  if (read.length === 0 || ctx.options.dryRun) return page;
  const present = await ctx.target.selectFrom('user_logins').select(['login_provider', 'provider_key']).where('user_id', 'in', [...new Set(read.map((l) => l.UserId))]).execute();
  const presentKeys = new Set(present.map((p) => `${p.login_provider}\u0000${p.provider_key}`));
  const logins = read.filter((l) => !presentKeys.has(`${l.LoginProvider}\u0000${l.ProviderKey}`));
  page.skipped += read.length - logins.length;
  if (logins.length === 0) return page;
  const users = await existingUserIds(ctx, logins.map((l) => l.UserId));
  const rows = logins.filter((l) => users.has(l.UserId)).map((l) => ({ login_provider: l.LoginProvider, provider_key: l.ProviderKey, provider_display_name: l.ProviderDisplayName, user_id: l.UserId }));
  for (const l of logins) if (!users.has(l.UserId)) page.warnings.push(`login ${l.LoginProvider} of user ${l.UserId} skipped: the user was not migrated`);
  page.skipped += logins.length - rows.length;
  if (rows.length === 0) return page;
  const written = await ctx.target.insertInto('user_logins').values(rows).onConflict((oc) => oc.doNothing()).returning('user_id').execute();
  count(page, rows.length, written.length);
  return page;
};

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

export function base32Decode(value: string): Buffer {
  const clean = value.toUpperCase().replace(/[\s=-]/g, '');
  let bits = 0;
  let buffer = 0;
  const out: number[] = [];
  for (const char of clean) {
    const index = BASE32.indexOf(char);
    if (index < 0) throw new Error('not base32');
    buffer = (buffer << 5) | index;
    bits += 5;
    if (bits >= 8) {
      out.push((buffer >> (bits - 8)) & 0xff);
      bits -= 8;
    }
  }
  return Buffer.from(out);
}

const AUTHENTICATOR_STORE = '[AspNetUserStore]';

/** AspNetUserTokens (AuthenticatorKey, RecoveryCodes) → mfa_credentials with deterministic ids; users who already have MFA are skipped. */
export const mfaPass: Pass = async (ctx, cursor) => {
  let query = ctx.source
    .selectFrom('AspNetUserTokens')
    .select(['UserId', 'Name', 'Value'])
    .where('LoginProvider', '=', AUTHENTICATOR_STORE)
    .where('Name', 'in', ['AuthenticatorKey', 'RecoveryCodes'])
    .orderBy('UserId')
    .orderBy('Name')
    .offset(0).fetch(ctx.options.pageSize);
  if (cursor) {
    const [userId, name] = JSON.parse(cursor) as [string, string];
    query = query.where('UserId', '>=', userId).where((eb) => eb.or([eb('UserId', '>', userId), eb('Name', '>', name)]));
  }
  const tokens = await query.execute();
  const page = { ...emptyPage(), read: tokens.length, next: nextCursor(tokens, ctx.options.pageSize, (t) => [t.UserId, t.Name]) };
  if (tokens.length === 0 || ctx.options.dryRun) return page;
  const key = ctx.dataProtectionKey;
  if (!key) throw new Error('DataProtection:Key is required to migrate MFA credentials (32 bytes, base64)');

  const userIds = [...new Set(tokens.map((t) => t.UserId))];
  const users = await existingUserIds(ctx, userIds);
  // "Already has MFA" means MFA that did not come from this migration: re-runs find their own rows and skip them by id.
  const enrolled = await ctx.target.selectFrom('mfa_credentials').select(['user_id', 'label']).where('user_id', 'in', userIds).execute();
  const hasOwnMfa = new Set(enrolled.filter((e) => !e.label.startsWith('source-')).map((e) => e.user_id));
  const alreadyMigrated = new Set(enrolled.filter((e) => e.label.startsWith('source-')).map((e) => e.user_id));
  const rows: Array<{ id: string; user_id: string; kind: 'totp' | 'recovery-code'; label: string; secret: string }> = [];
  for (const token of tokens) {
    if (!users.has(token.UserId) || hasOwnMfa.has(token.UserId) || alreadyMigrated.has(token.UserId) || !token.Value) {
      page.skipped++;
      continue;
    }
    if (token.Name === 'AuthenticatorKey') {
      try {
        rows.push({ id: uuidV5(`${token.UserId}:source-totp`), user_id: token.UserId, kind: 'totp', label: 'source-totp', secret: protectSecret(base32Decode(token.Value), key) });
      } catch {
        page.skipped++;
        page.warnings.push(`authenticator key of user ${token.UserId} is not base32 and was skipped`);
      }
    } else {
      token.Value.split(';').map((c) => c.trim()).filter(Boolean).forEach((code, index) => {
        const label = `source-rc-${index + 1}`;
        rows.push({ id: uuidV5(`${token.UserId}:${label}`), user_id: token.UserId, kind: 'recovery-code', label, secret: createHmac('sha256', key).update(code).digest('base64') });
      });
    }
  }
  if (rows.length === 0) return page;
  const written = await ctx.target.insertInto('mfa_credentials').values(rows).onConflict((oc) => oc.doNothing()).returning('id').execute();
  page.created += written.length;
  page.skipped += rows.length - written.length;
  return page;
};

