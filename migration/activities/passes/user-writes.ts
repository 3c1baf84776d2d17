import type { Kysely, RawBuilder } from 'kysely';
import type { SourceDatabase } from '../../source/source-schema';
import { inKeyOrder, readSecurityStamps, readUsersWithSignInFlags, type UserPageBounds } from '../../source/user-reads';
import type { Db } from '../../../platform/store/database';
import {
  copyNewUsers,
  fillSecurityStamps,
  insertUsersSkippingHeld,
  keyHoldersOf,
  raiseSignInFlags,
  removeUsersCreatedBy,
  passwordsChangedHere,
  upsertUsers as writeUpserts,
  withoutSecurityStamp,
  withoutSignInFlags,
  type MigratedUser,
} from '../../store/migrated-users';
import type { PageResult } from '../types';

interface WriteContext {
  source: Kysely<SourceDatabase>;
  target: Db;
  version: string;
}

interface Holder {
  id: string;
  email: string;
  createdByThisRun: boolean;
}

/** The other users holding the e-mail addresses and user names of these rows in the target. */
async function holdersOf(
  { target, version }: WriteContext,
  rows: MigratedUser[],
): Promise<(row: MigratedUser) => Holder[]> {
  const taken = await keyHoldersOf(target, rows);
  const holder = (t: (typeof taken)[number]): Holder => ({
    id: t.id,
    email: t.email,
    createdByThisRun: t.migration_version === version,
  });
  const byEmail = new Map(taken.map((t) => [t.normalized_email, holder(t)]));
  const byUserName = new Map(taken.map((t) => [t.normalized_user_name, holder(t)]));
  return (row) => {
    const found = [byEmail.get(row.normalized_email), byUserName.get(row.normalized_user_name)].filter(
      (h): h is Holder => h !== undefined && h.id !== row.id,
    );
    return found.filter((h, i) => found.findIndex((o) => o.id === h.id) === i);
  };
}

/**
 * Upsert writes the source's password hash over the one here (the spec: never use Upsert after cutover). A page whose
 * users changed their password here since they were migrated (re-hashed at a sign-in, reset, changed) says how many,
 * so a dry run shows it before the run does it.
 */
export async function warnOfPasswordsOverwritten(
  target: Db,
  rows: MigratedUser[],
  page: PageResult,
  dryRun: boolean,
): Promise<void> {
  const changed = await passwordsChangedHere(target, rows);
  if (changed === 0) return;
  page.warnings.push(
    `${changed} user(s) whose password changed here since they were migrated (re-hashed at sign-in, reset or changed) ${dryRun ? 'would have' : 'had'} it overwritten with the source's: UsersMode Upsert; use CreateOnly after cutover`,
  );
}

// A duplicate is skipped with a warning, never merged.
function skipDuplicate(page: PageResult, user: { id: string; email: string }, holder: string): void {
  page.skipped++;
  page.warnings.push(`user ${user.id} skipped: e-mail or user name ${user.email} belongs to user ${holder}`);
}

/**
 * Of two source users sharing an e-mail address or user name, the first in the source's key order is migrated. The
 * partitions of the users pass write side by side, so the later one may have been written first: it is removed
 * again, which is safe because this very run created it and the roles, logins and MFA passes have not started.
 * Returns the rows whose holders were removed, to be written now.
 */
async function displaceLaterDuplicates(
  ctx: WriteContext,
  contested: Array<{ row: MigratedUser; holders: Holder[] }>,
  page: PageResult,
): Promise<MigratedUser[]> {
  if (contested.length === 0) return [];
  const ids = [...new Set(contested.flatMap(({ row, holders }) => [row.id, ...holders.map((h) => h.id)]))];
  const sourceOrder = await inKeyOrder(ctx.source, ids);
  const rank = (id: string) => sourceOrder.indexOf(id);
  const winnerOf = new Map<string, MigratedUser>();
  for (const { row, holders } of contested) {
    const earlier = holders.find((h) => !h.createdByThisRun || rank(h.id) < rank(row.id));
    if (earlier) skipDuplicate(page, row, earlier.id);
    else for (const h of holders) winnerOf.set(h.id, row);
  }
  if (winnerOf.size === 0) return [];
  const removed = await removeUsersCreatedBy(ctx.target, [...winnerOf.keys()], ctx.version);
  // The removed users were counted as created by their own pages.
  page.created -= removed.length;
  for (const user of removed) skipDuplicate(page, user, winnerOf.get(user.id)!.id);
  return [...new Set(winnerOf.values())];
}

/** Rounds of displacement before a still-refused row is skipped: each round settles every duplicate seen so far. */
const DISPLACEMENT_ROUNDS = 3;

const copyUsers = (ctx: WriteContext, rows: MigratedUser[]) => copyNewUsers(ctx.target, rows);

/**
 * CreateOnly. Most rows of a page meet no existing key and go in with one COPY (see copyUnlessAnyExists);
 * the others take the careful way. A row sharing a key with an earlier row of the page is known to be one of them;
 * when the COPY still fails (a key held in the target, or by a neighbouring page), the holders of the page's
 * keys are looked up to tell the rest apart, and only when that too fails (another writer meanwhile) does the whole
 * page go the careful way.
 */
export async function createUsers(ctx: WriteContext, rows: MigratedUser[], page: PageResult): Promise<void> {
  const emails = new Set<string>();
  const userNames = new Set<string>();
  let clear = rows.filter((row) => {
    if (emails.has(row.normalized_email) || userNames.has(row.normalized_user_name)) return false;
    emails.add(row.normalized_email);
    userNames.add(row.normalized_user_name);
    return true;
  });
  let written = await copyUsers(ctx, clear);
  if (written === undefined) {
    const holdersOfRow = await holdersOf(ctx, clear);
    clear = clear.filter((row) => holdersOfRow(row).length === 0);
    written = clear.length === 0 ? 0 : await copyUsers(ctx, clear);
    if (written === undefined) return createCarefully(ctx, rows, page);
  }
  page.created += written;
  const cleared = new Set(clear);
  await createCarefully(
    ctx,
    rows.filter((row) => !cleared.has(row)),
    page,
  );
}

/**
 * Insert, letting every unique key refuse what exists (`on conflict do nothing` also keeps the first of two page rows
 * sharing an e-mail); only the refused rows are looked up.
 */
async function createCarefully(ctx: WriteContext, rows: MigratedUser[], page: PageResult): Promise<void> {
  let pending = rows;
  for (let round = 1; pending.length > 0; round++) {
    const insertedIds = await insertUsersSkippingHeld(ctx.target, pending);
    page.created += insertedIds.size;
    const refused = pending.filter((row) => !insertedIds.has(row.id));
    if (refused.length === 0) return;
    const holdersOfRow = await holdersOf(ctx, refused);
    const contested: Array<{ row: MigratedUser; holders: Holder[] }> = [];
    for (const row of refused) {
      const holders = holdersOfRow(row);
      // No other holder: the user itself arrived since the existence check (another writer), a plain skip.
      if (holders.length === 0) page.skipped++;
      else if (round < DISPLACEMENT_ROUNDS) contested.push({ row, holders });
      else skipDuplicate(page, row, holders[0].id);
    }
    pending = await displaceLaterDuplicates(ctx, contested, page);
  }
}

/**
 * What a version that did not carry a fact left out of existing users, and how it is filled in from the source: the
 * target names the page's users still lacking it (`stale`, a condition on the users row that usersInTarget asks with
 * the page's other questions); only when there are any are the source's users of the page (`bounds`) read, in one
 * range read, and only users in both are written. Each write only fills in (never undoes), so a re-run changes nothing
 * and the service's own changes stay; a CreateOnly run never reads existing users otherwise.
 */
interface Backfill<S extends { Id: string }, R> {
  stale: RawBuilder<boolean>;
  read: (source: Kysely<SourceDatabase>, bounds: UserPageBounds, pageSize: number) => Promise<S[]>;
  row: (user: S) => R;
  write: (target: Db, rows: R[]) => Promise<void>;
}

/** A backfill step as a condition and one runner over the ids meeting it (its row shapes stay its own). */
const backfill = <S extends { Id: string }, R>(step: Backfill<S, R>) => ({
  stale: step.stale,
  run: async (ctx: WriteContext, staleIds: Set<string>, bounds: UserPageBounds, pageSize: number): Promise<void> => {
    if (staleIds.size === 0) return;
    const rows = (await step.read(ctx.source, bounds, pageSize)).filter((u) => staleIds.has(u.Id)).map(step.row);
    if (rows.length > 0) await step.write(ctx.target, rows);
  },
});

const BACKFILLS = [
  // Two-step sign-in and a confirmed e-mail the source has on are switched on for users migrated with both off.
  backfill({
    stale: withoutSignInFlags,
    read: readUsersWithSignInFlags,
    row: (u) => ({
      id: u.Id,
      two_factor_enabled: Boolean(u.TwoFactorEnabled),
      email_confirmed: Boolean(u.EmailConfirmed),
    }),
    write: raiseSignInFlags,
  }),
  // The source's security stamp, so that source cookies can be carried over at cutover (a cookie is honoured only
  // under the stamp it was issued with); not where the user's sessions ended here since.
  backfill({
    stale: withoutSecurityStamp,
    read: readSecurityStamps,
    row: (u) => ({ id: u.Id, security_stamp: u.SecurityStamp! }),
    write: fillSecurityStamps,
  }),
];

/** The conditions on an existing user that name what BACKFILLS fill in, in their order (see usersInTarget). */
export const BACKFILL_CONDITIONS = BACKFILLS.map((step) => step.stale);

/**
 * Fills in, for the page's users that exist already, what earlier versions did not carry over (BACKFILLS); `stale`
 * holds the users meeting each of BACKFILL_CONDITIONS.
 */
export async function backfillExistingUsers(
  ctx: WriteContext,
  stale: Array<Set<string>>,
  bounds: UserPageBounds,
  pageSize: number,
): Promise<void> {
  for (const [i, step] of BACKFILLS.entries()) await step.run(ctx, stale[i], bounds, pageSize);
}

/** Upsert: every duplicate is found first, because `on conflict (id) do update` cannot skip a clash on another key. */
export async function upsertUsers(ctx: WriteContext, rows: MigratedUser[], page: PageResult): Promise<void> {
  const holdersOfRow = await holdersOf(ctx, rows);
  const contested = rows.map((row) => ({ row, holders: holdersOfRow(row) })).filter((c) => c.holders.length > 0);
  const freed = new Set((await displaceLaterDuplicates(ctx, contested, page)).map((row) => row.id));
  const blocked = new Set(contested.map((c) => c.row.id).filter((id) => !freed.has(id)));
  // Within the page, rows come in source key order: the first of two sharing a key wins.
  const seen = new Map<string, string>();
  const writable = rows.filter((row) => {
    if (blocked.has(row.id)) return false;
    const earlier = seen.get(row.normalized_email) ?? seen.get(row.normalized_user_name);
    if (earlier) {
      skipDuplicate(page, row, earlier);
      return false;
    }
    seen.set(row.normalized_email, row.id).set(row.normalized_user_name, row.id);
    return true;
  });
  if (writable.length === 0) return;
  await warnOfPasswordsOverwritten(ctx.target, writable, page, false);
  const { created, updated } = await writeUpserts(ctx.target, writable);
  page.created += created;
  page.updated += updated;
}
