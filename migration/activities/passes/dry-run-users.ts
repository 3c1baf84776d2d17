import { normalize } from '../../../platform/store/users';
import { keyHoldersOf, type MigratedUser } from '../../store/migrated-users';
import { inKeyOrder, usersSharingKeys } from '../../source/user-reads';
import type { PageResult, PassContext } from '../types';

const looksLikeEmail = (v: string | null) => v !== null && /^[^@\s]+@[^@\s]+$/.test(v);

/** The keys a source user would hold once migrated, as the users pass derives them (users.ts). */
function keysOf(user: { Email: string | null; UserName: string | null }): string[] {
  const email = looksLikeEmail(user.Email) ? user.Email! : looksLikeEmail(user.UserName) ? user.UserName! : null;
  return email ? [normalize(email), normalize(user.UserName ?? email)] : [];
}

/**
 * What the real run's writes would refuse, for a dry run that writes nothing and so cannot meet its own earlier rows:
 * a row whose e-mail address or user name another user of the target holds, or an earlier user of the source (in the
 * source's key order, as the real run keeps the first) would hold, is counted skipped with the real run's warning.
 * Returns the rows the real run would write.
 */
export async function simulateUserWrites(
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
  const values = rows.flatMap((r) => [r.email, r.user_name]);
  const sharing = (await usersSharingKeys(ctx.source, values)).filter((u) => keysOf(u).length > 0);
  const order = await inKeyOrder(ctx.source, [...new Set([...rows.map((r) => r.id), ...sharing.map((u) => u.Id)])]);
  const rank = new Map(order.map((id, i) => [id, i]));
  const firstHolder = new Map<string, string>();
  for (const user of [...sharing].sort((a, b) => rank.get(a.Id)! - rank.get(b.Id)!))
    for (const key of keysOf(user)) if (!firstHolder.has(key)) firstHolder.set(key, user.Id);
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
