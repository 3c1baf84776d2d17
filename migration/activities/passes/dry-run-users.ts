import { normalize } from '../../../platform/store/users';
import { keyHoldersOf, missingUserIds, type MigratedUser } from '../../store/migrated-users';
import { inKeyOrder, usersSharingKeys } from '../../source/user-reads';
import type { PageResult, PassContext } from '../types';

const looksLikeEmail = (v: string | null) => v !== null && /^[^@\s]+@[^@\s]+$/.test(v);

/** The keys a source user would hold once migrated, as the users pass derives them (users.ts). */
function keysOf(user: { Email: string | null; UserName: string | null }): string[] {
  const email = looksLikeEmail(user.Email) ? user.Email! : looksLikeEmail(user.UserName) ? user.UserName! : null;
  return email ? [normalize(email), normalize(user.UserName ?? email)] : [];
}

/**
 * What the real run's writes would do, for a dry run that writes nothing and so cannot meet its own earlier rows:
 * the rows it would refuse are counted skipped with its warnings (see survivingUserWrites), the others created or
 * updated as it would count them. Returns the rows the real run would write.
 */
export async function simulateUserWrites(
  ctx: Pick<PassContext, 'source' | 'target' | 'options'>,
  rows: MigratedUser[],
  page: PageResult,
): Promise<MigratedUser[]> {
  const written = await survivingUserWrites(ctx, rows, page);
  // What the real run would count: under CreateOnly every row written is new (the users pass left existing users
  // out); under Upsert a row whose id exists is an update.
  const missing = new Set(
    ctx.options.usersMode === 'CreateOnly'
      ? written.map((r) => r.id)
      : await missingUserIds(
          ctx.target,
          written.map((r) => r.id),
        ),
  );
  page.created += missing.size;
  page.updated += written.length - missing.size;
  return written;
}

/**
 * What the real run's writes would refuse, for a dry run that writes nothing and so cannot meet its own earlier
 * rows:
 * a row whose e-mail address or user name another user of the target holds, or an earlier user of the source (in the
 * source's key order, as the real run keeps the first) would hold, is counted skipped with the real run's warning.
 * Returns the rows the real run would write.
 */
async function survivingUserWrites(
  ctx: Pick<PassContext, 'source' | 'target'>,
  rows: MigratedUser[],
  page: PageResult,
): Promise<MigratedUser[]> {
  if (rows.length === 0) return rows;
  const targetHolder = new Map<string, string>();
  for (const held of await keyHoldersOf(ctx.target, rows)) {
    targetHolder.set(held.normalized_email, held.id);
    targetHolder.set(held.normalized_user_name, held.id);
  }
  // The source users each key would go to in the real run: the first in the source's key order. Only keys that more
  // than one source user would hold need that order, so only their holders are ranked (a short list).
  const sharing = await usersSharingKeys(
    ctx.source,
    rows.flatMap((r) => [r.normalized_email, r.normalized_user_name]),
  );
  const claimants = new Map<string, Set<string>>();
  for (const user of sharing)
    for (const key of keysOf(user)) claimants.set(key, (claimants.get(key) ?? new Set()).add(user.Id));
  const contested = [...claimants.values()].filter((ids) => ids.size > 1);
  const order =
    contested.length === 0 ? [] : await inKeyOrder(ctx.source, [...new Set(contested.flatMap((ids) => [...ids]))]);
  const rank = new Map(order.map((id, i) => [id, i]));
  const firstHolder = new Map<string, string>();
  for (const [key, ids] of claimants)
    if (ids.size > 1) firstHolder.set(key, [...ids].sort((a, b) => rank.get(a)! - rank.get(b)!)[0]);
  return rows.filter((row) => {
    const keys = [row.normalized_email, row.normalized_user_name];
    const holder =
      keys.map((k) => targetHolder.get(k)).find((id) => id !== undefined && id !== row.id) ??
      keys.map((k) => firstHolder.get(k)).find((id) => id !== undefined && id !== row.id);
    if (holder === undefined) return true;
    page.skipped++;
    page.warnings.push(`user ${row.id} skipped: e-mail or user name ${row.email} belongs to user ${holder}`);
    return false;
  });
}
