import type { Kysely } from 'kysely';
import { readThroughs } from '../platform/observability/metrics';
import { logger } from '../platform/observability/logger';
import type { KeyRing } from '../platform/security/data-protection';
import { persistedGrantKeys } from '../platform/security/persisted-grant-keys';
import type { Db } from '../platform/store/database';
import { insertGrants } from '../platform/store/migrated-configuration';
import { PASS_IMPLEMENTATIONS } from './activities';
import { sealedGrantRow } from './activities/passes/refresh-tokens';
import { userCursor, type MigrationOptions, type PassContext } from './activities/types';
import { readRefreshTokenByKeys } from './source/configuration';
import {
  loadSourceKeyRing,
  type SourceDataProtectionSettings,
  type SourceKeyRing,
} from './source/data-protection-keys';
import type { SourceDatabase } from './source/schema';
import { openStockRefreshToken } from './source/stock-refresh-tokens';
import { findUserBoundsByEmail } from './source/users';

export interface ReadThroughDependencies {
  target: Db;
  /** The source, read only: nothing here writes it. */
  source: Kysely<SourceDatabase>;
  /** Migration:ReadThrough:Until: after it, nothing reads the source. */
  until: Date;
  dataProtection: KeyRing;
  sourceDataProtection: SourceDataProtectionSettings;
}

/** The passes that make a user, in the migration's order: the user, then its roles, logins and MFA. */
const USER_PASSES = ['users', 'user-roles', 'logins', 'mfa'] as const;

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

/**
 * The dual read of the cutover (Migration:ReadThrough): until the deadline, a refresh token or a user the last sweep
 * did not carry over is looked up in the source and adopted as the migration would have, so a client that refreshes
 * and a person who signs in are not turned away for arriving between the sweep and the repointing. Each look-up is
 * logged (ids, never e-mail addresses) and counted (read_through_total).
 */
export function createReadThrough(deps: ReadThroughDependencies) {
  const open = () => Date.now() < deps.until.getTime();
  let ring: { loaded: Promise<SourceKeyRing | undefined>; at: number } | undefined;
  const keyRing = () => {
    if (!ring || Date.now() - ring.at > KEY_RING_SECONDS * 1000)
      ring = { loaded: loadSourceKeyRing(deps.source, deps.sourceDataProtection), at: Date.now() };
    return ring.loaded;
  };
  const count = (kind: 'refresh-token' | 'user', outcome: string) => readThroughs.inc({ kind, outcome });
  /**
   * A source that cannot be read (a lost connection, a key ring folder gone) fails the look-up, not the request: the
   * token or the sign-in is then treated as unknown, and the failure is logged and counted.
   */
  const guarded =
    <A extends unknown[]>(kind: 'refresh-token' | 'user', lookUp: (...args: A) => Promise<boolean>) =>
    async (...args: A): Promise<boolean> => {
      if (!open()) return false;
      try {
        return await lookUp(...args);
      } catch (error) {
        count(kind, 'error');
        logger.error(`read-through: the source could not be read for a ${kind}: ${(error as Error).message}`);
        return false;
      }
    };

  return {
    /** Whether the window is open now. */
    open,

    /**
     * A refresh token the source holds under one of the hashes of `handle`, written here as the migration writes one
     * (sealed, under the hashed key) for the provider to adopt; false when there is none or it cannot be carried over.
     */
    refreshToken: guarded('refresh-token', async (handle: string) => {
      const grant = await readRefreshTokenByKeys(deps.source, persistedGrantKeys(handle));
      if (!grant) {
        count('refresh-token', 'not-found');
        return false;
      }
      const loaded = await keyRing();
      const protection = { ring: loaded?.ring, applicationName: deps.sourceDataProtection.ApplicationName };
      const opened = openStockRefreshToken(grant, protection, new Date());
      if (!opened.carried) {
        count('refresh-token', opened.reason);
        logger.warn(
          `read-through: a refresh token of client ${grant.ClientId} in the source was not carried over: ${opened.reason}`,
        );
        return false;
      }
      await insertGrants(deps.target, [sealedGrantRow(grant, opened, deps.dataProtection)]);
      count('refresh-token', 'adopted');
      logger.info(
        `read-through: a refresh token of client ${grant.ClientId} for user ${opened.subjectId} came from the source`,
      );
      return true;
    }),

    /**
     * The source user with this e-mail, migrated here on the spot (claims folded, roles, logins, two-step sign-in) by
     * the migration's own passes; false when the source has no such user.
     */
    user: guarded('user', async (email: string) => {
      const bounds = await findUserBoundsByEmail(deps.source, email);
      if (!bounds) {
        count('user', 'not-found');
        return false;
      }
      const ctx: PassContext = {
        source: deps.source,
        target: deps.target,
        options: ON_THE_SPOT,
        dataProtection: deps.dataProtection,
        sourceDataProtection: deps.sourceDataProtection,
      };
      for (const pass of USER_PASSES) await PASS_IMPLEMENTATIONS[pass](ctx, userCursor(bounds.before), bounds.id);
      count('user', 'migrated');
      logger.info(`read-through: user ${bounds.id} was migrated from the source at sign-in`);
      return true;
    }),
  };
}

export type ReadThrough = ReturnType<typeof createReadThrough>;
