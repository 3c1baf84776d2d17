import { sql, type Kysely } from 'kysely';
import type { SourceDatabase } from '../../../migration-source/schema';
import type { Db } from '../../../store/database';
import { copyUnlessAnyExists } from '../../../store/insert-new';
import { jsonRows } from '../../../store/json-rows';
import type { NewUserRow } from '../../../store/schema';
import type { PageResult } from '../types';
import { withinUserPage, type UserPageBounds } from '../user-pages';

/** The users columns the migration writes, in COPY order. */
export const USER_COLUMNS = [
  'id',
  'email',
  'normalized_email',
  'user_name',
  'normalized_user_name',
  'first_name',
  'last_name',
  'company_name',
  'organization_id',
  'custom_attributes',
  'password_hash',
  'password_format',
  'migration_version',
  'two_factor_enabled',
  'email_confirmed',
  'lockout_end',
  'access_failed_count',
] as const satisfies ReadonlyArray<keyof NewUserRow>;

export type MigratedUser = Required<Pick<NewUserRow, Exclude<(typeof USER_COLUMNS)[number], 'custom_attributes'>>> & {
  custom_attributes: Record<string, string>;
};

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

const anyOf = (values: string[]) => sql<string>`any(${values})`;

/**
 * The other users holding the e-mail addresses and user names of these rows in the target, looked up by key: one
 * index probe per row (a lateral subquery behind `offset 0`; see userExists in store/users.ts for why).
 */
async function holdersOf(
  { target, version }: WriteContext,
  rows: MigratedUser[],
): Promise<(row: MigratedUser) => Holder[]> {
  const keys = sql<{
    email: string;
    user_name: string;
  }>`(select unnest(${rows.map((r) => r.normalized_email)}::text[]) as email, unnest(${rows.map((r) => r.normalized_user_name)}::text[]) as user_name)`;
  const taken = await target
    .selectFrom(keys.as('k'))
    .innerJoinLateral(
      (eb) =>
        eb
          .selectFrom('users')
          .select(['id', 'email', 'normalized_email', 'normalized_user_name', 'migration_version'])
          .where((w) =>
            w.or([w('normalized_email', '=', w.ref('k.email')), w('normalized_user_name', '=', w.ref('k.user_name'))]),
          )
          .offset(0)
          .as('t'),
      (join) => join.onTrue(),
    )
    .selectAll('t')
    .execute();
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
  const sourceOrder = (
    await ctx.source.selectFrom('AspNetUsers').select('Id').where('Id', 'in', ids).orderBy('Id').execute()
  ).map((u) => u.Id);
  const rank = (id: string) => sourceOrder.indexOf(id);
  const winnerOf = new Map<string, MigratedUser>();
  for (const { row, holders } of contested) {
    const earlier = holders.find((h) => !h.createdByThisRun || rank(h.id) < rank(row.id));
    if (earlier) skipDuplicate(page, row, earlier.id);
    else for (const h of holders) winnerOf.set(h.id, row);
  }
  if (winnerOf.size === 0) return [];
  const removed = await ctx.target
    .deleteFrom('users')
    .where('id', '=', anyOf([...winnerOf.keys()]))
    .where('migration_version', '=', ctx.version)
    .returning(['id', 'email'])
    .execute();
  // The removed users were counted as created by their own pages.
  page.created -= removed.length;
  for (const user of removed) skipDuplicate(page, user, winnerOf.get(user.id)!.id);
  return [...new Set(winnerOf.values())];
}

/** Rounds of displacement before a still-refused row is skipped: each round settles every duplicate seen so far. */
const DISPLACEMENT_ROUNDS = 3;

const copyUsers = (ctx: WriteContext, rows: MigratedUser[]) =>
  copyUnlessAnyExists(ctx.target, 'users', USER_COLUMNS, rows);

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

/** An insert of the users from one JSON parameter: cheaper for PostgreSQL to plan than one row of parameters each. */
const insertUsers = (ctx: WriteContext, rows: MigratedUser[]) =>
  ctx.target
    .insertInto('users')
    .columns(USER_COLUMNS)
    .expression(jsonRows('users', USER_COLUMNS, rows));

/**
 * Insert, letting every unique key refuse what exists (`on conflict do nothing` also keeps the first of two page rows
 * sharing an e-mail); only the refused rows are looked up.
 */
async function createCarefully(ctx: WriteContext, rows: MigratedUser[], page: PageResult): Promise<void> {
  let pending = rows;
  for (let round = 1; pending.length > 0; round++) {
    const inserted = await insertUsers(ctx, pending)
      .onConflict((oc) => oc.doNothing())
      .returning('id')
      .execute();
    page.created += inserted.length;
    const insertedIds = new Set(inserted.map((r) => r.id));
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
 * Users migrated before the sign-in state was carried over (both flags off, as the schema change left them) gain it
 * from the source: two-step sign-in and a confirmed e-mail that the source has on are switched on. Only ever on, so a
 * re-run changes nothing and the service's own changes stay; a CreateOnly run never reads existing users otherwise.
 * The target names the page's users with both flags off; only when there are any are the source's users of the page
 * (`bounds`) with a flag on read, in one range read, and only users in both are written.
 */
export async function backfillSignInFlags(
  ctx: WriteContext,
  existingIds: string[],
  bounds: UserPageBounds,
  pageSize: number,
): Promise<void> {
  if (existingIds.length === 0) return;
  // One key probe per id of the page (`offset 0` keeps the subquery from being planned as a join): `id = any(…)` or a
  // join of a whole page is planned as a scan of every user.
  const stale = await sql<{ id: string }>`
    select page.id from unnest(${existingIds}::text[]) as page(id)
    where exists (
      select from users where users.id = page.id and users.migration_version is not null
        and not users.two_factor_enabled and not users.email_confirmed offset 0)`.execute(ctx.target);
  if (stale.rows.length === 0) return;
  const staleIds = new Set(stale.rows.map((u) => u.id));
  const flagged = await withinUserPage(
    ctx.source
      .selectFrom('AspNetUsers')
      .select(['Id', 'TwoFactorEnabled', 'EmailConfirmed'])
      .where((eb) => eb.or([eb('TwoFactorEnabled', '=', true), eb('EmailConfirmed', '=', true)])),
    bounds,
    pageSize,
  ).execute();
  const rows = flagged
    .filter((u) => staleIds.has(u.Id))
    .map((u) => ({
      id: u.Id,
      two_factor_enabled: Boolean(u.TwoFactorEnabled),
      email_confirmed: Boolean(u.EmailConfirmed),
    }));
  if (rows.length === 0) return;
  await sql`
    update users set
      two_factor_enabled = users.two_factor_enabled or source.two_factor_enabled,
      email_confirmed = users.email_confirmed or source.email_confirmed
    from (${jsonRows('users', ['id', 'two_factor_enabled', 'email_confirmed'], rows)}) as source
    where users.id = source.id`.execute(ctx.target);
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
  const written = await insertUsers(ctx, writable)
    // migration_version stays: it names the run that created the user.
    .onConflict((oc) =>
      oc.column('id').doUpdateSet((eb) => ({
        email: eb.ref('excluded.email'),
        normalized_email: eb.ref('excluded.normalized_email'),
        user_name: eb.ref('excluded.user_name'),
        normalized_user_name: eb.ref('excluded.normalized_user_name'),
        first_name: eb.ref('excluded.first_name'),
        last_name: eb.ref('excluded.last_name'),
        company_name: eb.ref('excluded.company_name'),
        organization_id: eb.ref('excluded.organization_id'),
        custom_attributes: eb.ref('excluded.custom_attributes'),
        password_hash: eb.ref('excluded.password_hash'),
        password_format: eb.ref('excluded.password_format'),
        email_confirmed: eb.ref('excluded.email_confirmed'),
        lockout_end: eb.ref('excluded.lockout_end'),
        access_failed_count: eb.ref('excluded.access_failed_count'),
        // Two-factor sign-in the user switched on in the service stays on.
        two_factor_enabled: sql<boolean>`users.two_factor_enabled or excluded.two_factor_enabled`,
        updated_at: new Date(),
      })),
    )
    .returning(sql<boolean>`(xmax = 0)`.as('inserted'))
    .execute();
  page.created += written.filter((w) => w.inserted).length;
  page.updated += written.filter((w) => !w.inserted).length;
}
