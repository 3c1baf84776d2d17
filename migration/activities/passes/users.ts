import { detectPasswordFormat } from '../../../platform/security/password-formats';
import { normalize } from '../../../platform/store/users';
import { usersInTarget, type MigratedUser } from '../../store/migrated-users';
import { DROPPED_CLAIMS, foldClaimsByUser, noClaims } from '../claim-folding';
import { identifierProblem } from '../identifiers';
import { emptyPage, IN_LIST_LIMIT, nextCursor, type PageResult, type Pass, type PassContext } from '../types';
import {
  BACKFILL_CONDITIONS,
  backfillExistingUsers,
  createUsers,
  upsertUsers,
  warnOfPasswordsOverwritten,
} from './user-writes';
import { simulateUserWrites } from './dry-run-users';
import {
  parseUserCursor,
  readClaims,
  readUserIds,
  readUsersById,
  readUsersOfPage,
  type UserPageBounds,
} from '../../source/user-reads';

const looksLikeEmail = (v: string | null) => v !== null && /^[^@\s]+@[^@\s]+$/.test(v);

/**
 * The page's users this run writes, with the target asked once about all of them (usersInTarget). A user deleted or
 * deactivated here is never migrated again, under either UsersMode: the source still holds its hash, roles and MFA;
 * skipped, and the page says how many. CreateOnly never touches a user that exists, so a delta sweep skips them before
 * reading their rows (on a re-run usually all of them); the existing ones only gain what earlier versions did not
 * carry (sign-in flags, security stamps). A dry run reads the target as the real run would, and writes nothing.
 */
async function usersToWrite(
  { source, target, options }: Pick<PassContext, 'source' | 'target' | 'options'>,
  keys: string[],
  bounds: UserPageBounds,
  page: PageResult,
): Promise<{ ids: string[]; wanted: Set<string> }> {
  const createOnly = options.usersMode === 'CreateOnly';
  const inTarget = await usersInTarget(target, keys, createOnly ? BACKFILL_CONDITIONS : []);
  const gone = inTarget.tombstoned;
  if (gone.size > 0) {
    page.skipped += gone.size;
    page.warnings.push(`${gone.size} user(s) deleted or deactivated here were not migrated again (tombstoned)`);
  }
  const ids = gone.size === 0 ? keys : keys.filter((id) => !gone.has(id));
  if (!createOnly) return { ids, wanted: new Set(ids) };
  const wanted = new Set(ids.filter((id) => inTarget.missing.has(id)));
  page.skipped += ids.length - wanted.size;
  if (!options.dryRun) {
    const stale = inTarget.meeting.map((meeting) => new Set([...meeting].filter((id) => !gone.has(id))));
    await backfillExistingUsers({ source, target, version: options.version }, stale, bounds, options.pageSize);
  }
  return { ids, wanted };
}

/**
 * A page of the users pass; `written` is, in a dry run, the rows the real run would write (the child passes of a dry
 * run write those users into their rolled-back transaction, see user-children.ts).
 */
async function usersPage(
  { source, target, options }: PassContext,
  cursor: string | null,
  until: string | null,
): Promise<{ page: PageResult; written: MigratedUser[] }> {
  const after = parseUserCursor(cursor);
  const keys = await readUserIds(source, { after, until }, options.pageSize);
  const page = { ...emptyPage(), read: keys.length, next: nextCursor(keys, options.pageSize, (id) => id) };
  const none = { page, written: [] };
  if (keys.length === 0) return none;
  const last = keys[keys.length - 1];
  const { ids, wanted } = await usersToWrite({ source, target, options }, keys, { after, until: last }, page);
  if (wanted.size === 0) return none;
  // A few users of the page (a delta sweep's new users, or the duplicates every sweep meets again) are read by id;
  // most of it, by key range.
  const byId = wanted.size * 4 <= ids.length && wanted.size <= IN_LIST_LIMIT;
  const [read, claims] = byId
    ? await Promise.all([readUsersById(source, [...wanted]), readClaims(source, { ids: [...wanted] }, DROPPED_CLAIMS)])
    : await Promise.all([
        readUsersOfPage(source, { after, until: last }, options.pageSize),
        readClaims(source, { after, last }, DROPPED_CLAIMS),
      ]);
  const users = read.filter((u) => wanted.has(u.Id));

  const claimsByUser = foldClaimsByUser(claims, (warning) => page.warnings.push(warning));
  const rows: MigratedUser[] = [];
  for (const user of users) {
    const problem = identifierProblem('user', user.Id);
    const email = looksLikeEmail(user.Email) ? user.Email! : looksLikeEmail(user.UserName) ? user.UserName! : null;
    if (problem || !email) {
      page.skipped++;
      page.warnings.push(problem ?? `user ${user.Id} has no e-mail address and was skipped`);
      continue;
    }
    const folded = claimsByUser.get(user.Id) ?? noClaims();
    const userName = user.UserName ?? email;
    // A null hash is an external-SSO-only user; any other hash is kept verbatim and verifies unchanged.
    const passwordFormat = user.PasswordHash ? (detectPasswordFormat(user.PasswordHash) ?? 'unknown') : null;
    if (passwordFormat === 'unknown')
      page.warnings.push(`user ${user.Id} has a password hash of an unknown format; the user must reset the password`);
    rows.push({
      id: user.Id,
      email,
      normalized_email: normalize(email),
      user_name: userName,
      normalized_user_name: normalize(userName),
      first_name: folded.firstName,
      last_name: folded.lastName,
      company_name: folded.companyName,
      organization_id: folded.organizationId,
      custom_attributes: folded.customAttributes,
      password_hash: user.PasswordHash,
      password_format: passwordFormat,
      migration_version: options.version,
      // ASP.NET Identity's sign-in state: an authenticator key alone does not mean two-factor sign-in is on.
      two_factor_enabled: Boolean(user.TwoFactorEnabled),
      email_confirmed: Boolean(user.EmailConfirmed),
      lockout_end: user.LockoutEnd ? new Date(user.LockoutEnd) : null,
      access_failed_count: user.AccessFailedCount ?? 0,
      // A source session cookie carries over only while its stamp is the user's (Migration:SourceSessions).
      security_stamp: user.SecurityStamp ?? null,
    });
  }
  if (rows.length === 0) return none;
  if (options.dryRun) {
    const written = await simulateUserWrites({ source, target, options }, rows, page);
    if (options.usersMode === 'Upsert') await warnOfPasswordsOverwritten(target, written, page, true);
    return { page, written };
  }
  await (options.usersMode === 'Upsert' ? upsertUsers : createUsers)(
    { source, target, version: options.version },
    rows,
    page,
  );
  return none;
}

/** AspNetUsers + AspNetUserClaims → users, ids verbatim, claims folded, hashes kept as they are. */
export const usersPass: Pass = async (ctx, cursor, until) => (await usersPage(ctx, cursor, until)).page;

/** The users a dry run's users pass would write for this key range (as its page reads them). */
export const usersADryRunWouldWrite = async (ctx: PassContext, cursor: string | null, until: string | null) =>
  (await usersPage({ ...ctx, options: { ...ctx.options, dryRun: true } }, cursor, until)).written;
