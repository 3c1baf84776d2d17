import { grantKeyColumn, readRefreshTokens } from '../../source/configuration-reads';
import { loadSourceKeyRing } from '../../source/data-protection-keys';
import {
  NOT_CARRIED,
  notLive,
  openStockRefreshToken,
  type NotCarriedReason,
  type Opened,
  type SourceGrantRow,
} from '../../source/stock-refresh-tokens';
import { protectText, type KeyRing } from '../../../platform/security/data-protection';
import { insertGrants } from '../../store/migrated-configuration';
import { withoutCommitting } from '../../store/uncommitted';
import { keysetPage } from '../id-pages';
import { countWrites, type PageResult, type Pass, type PassContext, type RefreshTokenTally } from '../types';

/** A refresh token as the source's page gives it. */
type RefreshTokenGrant = Awaited<ReturnType<typeof readRefreshTokens>>[number];

/**
 * A carried-over token as the store keeps it: under the source's hashed key (found only by hashing a presented handle)
 * and with its data sealed under the service's ring. The migration and the read-through write the same row.
 */
export function sealedGrantRow(
  grant: SourceGrantRow & { Key: string | null; Description: string | null },
  opened: Extract<Opened, { carried: true }>,
  ring: KeyRing,
) {
  return {
    key: grant.Key!,
    type: 'refresh_token',
    subject_id: opened.subjectId,
    session_id: grant.SessionId,
    client_id: grant.ClientId,
    description: grant.Description,
    creation_time: grant.CreationTime,
    expiration: opened.expiration,
    consumed_time: null,
    data: protectText(JSON.stringify(opened.data), ring),
    key_hashed: true,
    data_sealed: true,
  };
}

/** A dry run writes as the real run would and rolls back: its counts are the real run's, and nothing is kept. */
const writeGrants = (ctx: PassContext, rows: Parameters<typeof insertGrants>[1]) =>
  ctx.options.dryRun ? withoutCommitting(ctx.target, (trx) => insertGrants(trx, rows)) : insertGrants(ctx.target, rows);

const tally = (): RefreshTokenTally => ({ carriedOver: 0, notCarried: {} });
const notCarried = (t: RefreshTokenTally, reason: NotCarriedReason) =>
  (t.notCarried[reason] = (t.notCarried[reason] ?? 0) + 1);

/** A source fork's tokens, whose handles are kept verbatim: copied as they are. */
async function copyVerbatim(
  ctx: PassContext,
  page: PageResult,
  grants: RefreshTokenGrant[],
  live: RefreshTokenGrant[],
) {
  page.refreshTokens!.carriedOver = live.length;
  page.skipped = grants.length - live.length;
  if (live.length === 0) return page;
  const rows = live.map((g) => ({
    key: g.Key!,
    type: g.Type,
    subject_id: g.SubjectId,
    session_id: g.SessionId,
    client_id: g.ClientId,
    description: g.Description,
    creation_time: g.CreationTime,
    expiration: g.Expiration,
    consumed_time: g.ConsumedTime,
    data: g.Data,
  }));
  countWrites(page, live.length, await writeGrants(ctx, rows));
  return page;
}

/** The source's Data Protection key ring, for the live tokens of a page; its problems said on the first page. */
async function sourceProtection(ctx: PassContext, page: PageResult, cursor: string | null, anyLive: boolean) {
  // A key ring that cannot be read (a KeyRingPath that is not there) is a reason for each token, not a failed run.
  const keyRing = anyLive
    ? await loadSourceKeyRing(ctx.source, ctx.sourceDataProtection ?? {}).catch((error: Error) => {
        if (!cursor) page.warnings.push(`the source's Data Protection key ring could not be read: ${error.message}`);
        return undefined;
      })
    : undefined;
  // Said once, on the first page: a key of the ring that cannot open anything, so the rehearsal shows why.
  if (!cursor)
    for (const key of keyRing?.ring.keys.values() ?? [])
      if (key.problem)
        page.warnings.push(`source Data Protection key ${key.id} (${keyRing!.from}): ${key.problem.detail}`);
  return { ring: keyRing?.ring, applicationName: ctx.sourceDataProtection?.ApplicationName };
}

/** A stock source's tokens: opened with its key ring, sealed under the service's own, kept under the hashed key. */
async function carryStock(
  ctx: PassContext,
  page: PageResult,
  cursor: string | null,
  grants: RefreshTokenGrant[],
  live: RefreshTokenGrant[],
  now: Date,
) {
  const counted = page.refreshTokens!;
  const protection = await sourceProtection(ctx, page, cursor, live.length > 0);
  const carried = live.flatMap((g) => {
    const opened = openStockRefreshToken(g, protection, now);
    if (!opened.carried) {
      notCarried(counted, opened.reason);
      return [];
    }
    return [{ grant: g, opened }];
  });
  counted.carriedOver = carried.length;
  page.skipped = grants.length - carried.length;
  if (carried.length === 0) return page;
  if (!ctx.dataProtection) {
    // Nothing is kept in the clear: without the service's ring the opened data could not be sealed.
    page.warnings.push(
      'this worker has no DataProtection:Keys, so the refresh tokens it opened could not be sealed and were not kept',
    );
    page.skipped += carried.length;
    counted.carriedOver = 0;
    return page;
  }
  const rows = carried.map(({ grant, opened }) => sealedGrantRow(grant, opened, ctx.dataProtection!));
  const written = await writeGrants(ctx, rows);
  countWrites(page, rows.length, written);
  // A token an earlier run carried over is already here: this run's count is of the new ones.
  counted.carriedOver = written;
  return page;
}

/**
 * IdentityServer's refresh tokens (MigrateRefreshTokens), so clients keep them across the cutover:
 *
 * - from a stock source (SourceGrantKeysAreUnhashed false), whose `Key` is a hash of the handle and whose `Data` is
 *   protected by ASP.NET Core Data Protection: each live token is opened with the source's key ring and application
 *   name (Migration:SourceDataProtection), translated into the service's refresh-token data, sealed under the service's
 *   own ring (so the source's ring is not needed afterwards) and kept under the hashed key, to be adopted when a client
 *   presents the handle;
 * - from a source fork that keeps handles verbatim (SourceGrantKeysAreUnhashed true): copied as they are.
 *
 * Every token that is not carried over is counted with its reason (expired, consumed, wrong application name, missing
 * key, unknown payload version…), and a dry run says how many would be: no run fails on one.
 */
export const refreshTokensPass: Pass = async (ctx, cursor) => {
  const { source, options } = ctx;
  const now = new Date();
  const keyColumn = await grantKeyColumn(source);
  const { rows: grants, page } = await keysetPage(
    cursor,
    options.pageSize,
    (after) => readRefreshTokens(source, keyColumn, after, options.pageSize),
    (g) => (keyColumn === 'Id' ? g.Id : g.Key),
  );
  if (!options.migrateRefreshTokens) {
    page.skipped = grants.length;
    if (!cursor)
      page.warnings.push('refresh tokens were not migrated (MigrateRefreshTokens is false); users log in again');
    return page;
  }
  const counted = (page.refreshTokens = tally());
  const live = grants.filter((g) => {
    const reason = notLive(g, now) ?? (g.Key ? undefined : NOT_CARRIED.unreadable);
    if (reason) notCarried(counted, reason);
    return reason === undefined;
  });
  return options.sourceGrantKeysAreUnhashed
    ? copyVerbatim(ctx, page, grants, live)
    : carryStock(ctx, page, cursor, grants, live, now);
};
