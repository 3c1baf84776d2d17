import type { Kysely } from 'kysely';
import { readThroughs } from '../platform/observability/metrics';
import { logger } from '../platform/observability/logger';
import type { KeyRing } from '../platform/security/data-protection';
import { persistedGrantKeys } from '../platform/security/persisted-grant-keys';
import type { Db } from '../platform/store/database';
import { insertGrants } from './store/migrated-configuration';
import { PASS_IMPLEMENTATIONS } from './activities/passes/pass-implementations';
import { sealedGrantRow } from './activities/passes/refresh-tokens';
import { userCursor, type MigrationOptions, type PassContext } from './activities/types';
import { readRefreshTokenByKeys } from './source/configuration-reads';
import {
  loadSourceKeyRing,
  type SourceDataProtectionSettings,
  type SourceKeyRing,
} from './source/data-protection-keys';
import type { SourceDatabase } from './source/source-schema';
import { notLive, openStockRefreshToken } from './source/stock-refresh-tokens';
import { equalDuration } from '../platform/security/equal-duration';
import { isTombstoned, refusedSubject } from '../platform/store/read-through-guards';
import { spendReadThroughBudget } from './store/read-through-budget';
import { tallyReadThrough } from './store/read-through-tallies';
import { findUserBoundsByEmail } from './source/user-reads';

export interface ReadThroughDependencies {
  target: Db;
  /** The source, read only: nothing here writes it. Its queries are bounded by `timeoutMs` (connectSource). */
  source: Kysely<SourceDatabase>;
  /** Migration:ReadThrough:Until: after it, nothing reads the source. */
  until: Date;
  dataProtection: KeyRing;
  sourceDataProtection: SourceDataProtectionSettings;
  /** Source look-ups of every instance together per window (Migration:ReadThrough:PermitLimit, WindowSeconds). */
  budget: { permitLimit: number; windowSeconds: number };
  /** Migration:ReadThrough:TimeoutSeconds, in ms: the longest a user look-up is padded to. */
  timeoutMs: number;
  /** Migration:ReadThrough:RetryAfterSeconds (30 unless given). */
  retryAfterSeconds?: number;
  /** Migration:ReadThrough:UnavailableMessage. */
  unavailableMessage?: string;
}

/** What a user look-up found: the user migrated now, none to migrate, or no answer (the source unread or unclear). */
export type UserLookUp = 'migrated' | 'absent' | 'unavailable';

/** A look-up the source could not answer: unreadable, too slow, over budget, or ambiguous. */
export class SourceUnavailableError extends Error {}

/** The passes that add a user's roles, logins and MFA, in the migration's order, after the users pass made it. */
const CHILD_PASSES = ['user-roles', 'logins', 'mfa'] as const;

/** A user migrated on the spot is written as a CreateOnly run would, under its own version, one user a page. */
const ON_THE_SPOT: MigrationOptions = {
  version: 'read-through',
  dryRun: false,
  usersMode: 'CreateOnly',
  migrateClients: false,
  migrateRefreshTokens: false,
  sourceGrantKeysAreUnhashed: false,
  pageSize: 1,
  parallelism: 1,
};

/** The key ring is read again at most this often, so a key the source rotated in is found. */
const KEY_RING_SECONDS = 60;

type Kind = 'refresh-token' | 'user';
/** One look-up counted: in this process's read_through_total and in the store, every instance's together. */
const count = (deps: Pick<ReadThroughDependencies, 'target'>, kind: Kind, outcome: string) => {
  readThroughs.inc({ kind, outcome });
  return tallyReadThrough(deps.target, kind, outcome);
};

/**
 * The source user with this e-mail, migrated on the spot by the migration's own passes. Not when several source users
 * share the address (unclear: the caller must not make an account either), nor when the user was deleted or
 * deactivated here (a tombstone). The roles, logins and MFA are written only when this step made the user: one that
 * exists here already (another address now, or made by a parallel step) keeps what the service holds.
 */
async function migrateUser(deps: ReadThroughDependencies, email: string): Promise<UserLookUp> {
  const bounds = await findUserBoundsByEmail(deps.source, email);
  if (bounds === 'several') {
    await count(deps, 'user', 'ambiguous');
    logger.warn('read-through: several source users share an address typed here; none is migrated');
    return 'unavailable';
  }
  if (!bounds) {
    await count(deps, 'user', 'not-found');
    return 'absent';
  }
  if (await isTombstoned(deps.target, bounds.id)) {
    await count(deps, 'user', 'tombstoned');
    logger.info(`read-through: user ${bounds.id} was deleted or deactivated here and is not read through again`);
    return 'absent';
  }
  const ctx: PassContext = {
    source: deps.source,
    target: deps.target,
    options: ON_THE_SPOT,
    dataProtection: deps.dataProtection,
    sourceDataProtection: deps.sourceDataProtection,
  };
  const cursor = userCursor(bounds.before);
  const made = await PASS_IMPLEMENTATIONS.users(ctx, cursor, bounds.id);
  if (made.created === 0) {
    await count(deps, 'user', 'not-created');
    logger.warn(`read-through: user ${bounds.id} was not migrated: ${made.warnings.join('; ') || 'it exists here'}`);
    return 'absent';
  }
  for (const pass of CHILD_PASSES) await PASS_IMPLEMENTATIONS[pass](ctx, cursor, bounds.id);
  await count(deps, 'user', 'migrated');
  logger.info(`read-through: user ${bounds.id} was migrated from the source at sign-in`);
  return 'migrated';
}

/**
 * The dual read of the cutover (Migration:ReadThrough): until the deadline, a refresh token or a user the last sweep
 * did not carry over is looked up in the source and adopted as the migration would have, so a client that refreshes
 * and a person who signs in are not turned away for arriving between the sweep and the repointing. Each look-up is
 * logged (ids, never e-mail addresses) and counted (read_through_total), and spends one of the budget every instance
 * shares (read_through_budget): unknown handles sent in bulk cannot turn into unmetered source queries.
 */
export function createReadThrough(deps: ReadThroughDependencies) {
  const open = () => Date.now() < deps.until.getTime();
  let ring: { loaded: Promise<SourceKeyRing | undefined>; at: number } | undefined;
  const keyRing = () => {
    if (!ring || Date.now() - ring.at > KEY_RING_SECONDS * 1000)
      ring = { loaded: loadSourceKeyRing(deps.source, deps.sourceDataProtection), at: Date.now() };
    return ring.loaded;
  };
  /** A source that cannot be read, or a budget spent, fails the look-up (logged and counted), not the request. */
  const budgeted =
    <A extends unknown[], R>(kind: Kind, lookUp: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      if (!(await spendReadThroughBudget(deps.target, deps.budget.permitLimit, deps.budget.windowSeconds))) {
        await count(deps, kind, 'over-budget');
        throw new SourceUnavailableError('the read-through budget (Migration:ReadThrough:PermitLimit) is spent');
      }
      try {
        return await lookUp(...args);
      } catch (error) {
        await count(deps, kind, 'error');
        logger.error(`read-through: the source could not be read for a ${kind}: ${(error as Error).message}`);
        throw new SourceUnavailableError((error as Error).message);
      }
    };
  // A user look-up takes as long whether the source holds the address or not; the padding stops at the query timeout.
  const lookUpFloor = equalDuration({ halfLifeMs: 60_000, ceilingMs: deps.timeoutMs });
  const lookUpUser = budgeted('user', (email: string) => migrateUser(deps, email));
  const carryOver = budgeted('refresh-token', (handle: string) => carryRefreshTokenOver(deps, keyRing, handle));
  const stateOf = budgeted('refresh-token', (key: string) => readRefreshTokenByKeys(deps.source, [key]));

  return {
    /** Whether the window is open now. */
    open,
    retryAfterSeconds: deps.retryAfterSeconds ?? 30,
    unavailableMessage: deps.unavailableMessage,

    /**
     * A refresh token the source holds under one of the hashes of `handle`, written here as the migration writes one
     * (sealed, under the hashed key) for the provider to adopt; false when there is none, it cannot be carried over,
     * or the source could not be asked.
     */
    refreshToken: async (handle: string): Promise<boolean> => open() && carryOver(handle).catch(() => false),

    /**
     * Whether the token a sweep carried over under `key` is still live at the source: a token the source consumed,
     * revoked (its row gone) or let expire since the sweep is not adopted. True once the window is closed; throws
     * SourceUnavailableError when the source cannot be asked (the client may try again).
     */
    liveAtSource: async (key: string): Promise<boolean> => {
      if (!open()) return true;
      const row = await stateOf(key);
      const dead = row ? notLive(row, new Date()) : 'revoked';
      if (dead) await count(deps, 'refresh-token', `source-${dead}`);
      return dead === undefined;
    },

    /**
     * The source user with this e-mail, migrated here on the spot (claims folded, roles, logins, two-step sign-in);
     * 'absent' when there is none to migrate, 'unavailable' when the source could not say (a caller that would make
     * an account for the address must refuse).
     */
    user: async (email: string): Promise<UserLookUp> =>
      !open() ? 'absent' : lookUpFloor(() => lookUpUser(email).catch((): UserLookUp => 'unavailable')),
  };
}

/** The source's refresh token with this handle, written here as the migration writes one; whether it was. */
async function carryRefreshTokenOver(
  deps: ReadThroughDependencies,
  keyRing: () => Promise<SourceKeyRing | undefined>,
  handle: string,
): Promise<boolean> {
  const grant = await readRefreshTokenByKeys(deps.source, persistedGrantKeys(handle));
  if (!grant) {
    await count(deps, 'refresh-token', 'not-found');
    return false;
  }
  const loaded = await keyRing();
  const protection = { ring: loaded?.ring, applicationName: deps.sourceDataProtection.ApplicationName };
  const opened = openStockRefreshToken(grant, protection, new Date());
  if (!opened.carried) {
    await count(deps, 'refresh-token', opened.reason);
    logger.warn(
      `read-through: a refresh token of client ${grant.ClientId} in the source was not carried over: ${opened.reason}`,
    );
    return false;
  }
  const refused = await refusedSubject(deps.target, opened.subjectId, grant.CreationTime);
  if (refused) {
    await count(deps, 'refresh-token', refused);
    logger.info(
      `read-through: a refresh token of user ${opened.subjectId} in the source is not carried over: ${refused}`,
    );
    return false;
  }
  await insertGrants(deps.target, [sealedGrantRow(grant, opened, deps.dataProtection)]);
  await count(deps, 'refresh-token', 'adopted');
  logger.info(
    `read-through: a refresh token of client ${grant.ClientId} for user ${opened.subjectId} came from the source`,
  );
  return true;
}

export type ReadThrough = ReturnType<typeof createReadThrough>;
