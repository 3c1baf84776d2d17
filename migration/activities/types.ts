import type { KeyRing } from '../../platform/security/data-protection';
import type { Kysely } from 'kysely';
import type { SourceDatabase } from '../source/source-schema';
import type { SourceDataProtectionSettings } from '../source/data-protection-keys';
import type { Db } from '../../platform/store/database';
import type { KeyManagementTimes } from '../../platform/security/signing-key-timeline';

/** Everything a run needs to know that may appear in workflow history: no connection string, no key. */
export interface MigrationOptions {
  version: string;
  dryRun: boolean;
  usersMode: 'CreateOnly' | 'Upsert';
  migrateClients: boolean;
  migrateRefreshTokens: boolean;
  sourceGrantKeysAreUnhashed: boolean;
  /**
   * The signing-keys pass (Migration:MigrateSigningKeys, and the source's ApplicationName set). Optional: a schedule
   * made before the pass existed leaves it out, and then the pass does nothing.
   */
  migrateSigningKeys?: boolean;
  /** The service's KeyManagement durations (ms): a source key past RotationInterval + RetentionDuration is retired. */
  keyManagement?: KeyManagementTimes;
  pageSize: number;
  /** Key-range partitions of the user-keyed passes that run side by side. */
  parallelism: number;
}

import type { Counts } from '../store/migration-counts';
import type { PassName } from './plan';

export type { PassName };

/**
 * Source pages are keyset pages written `.orderBy(key).offset(0).fetch(pageSize)`: OFFSET … FETCH NEXT is the one
 * row-limit syntax SQL Server and PostgreSQL share (SQL Server has no LIMIT).
 */
export interface PageResult extends Counts {
  warnings: string[];
  /** Keyset cursor for the next page; null when the pass is done. */
  next: string | null;
  /** The clients pass: how many clients will work as they did at IdentityServer, and how many will notice the cutover. */
  readiness?: ClientReadiness;
  /** The refresh-tokens pass: how many were (or, in a dry run, would be) carried over, and why the others were not. */
  refreshTokens?: RefreshTokenTally;
  /** The signing-keys pass: how many were (or would be) imported, were there already, were retired, and why not. */
  signingKeys?: SigningKeyTally;
}

export interface SigningKeyTally {
  imported: number;
  /** Keys whose kid the store already holds (an earlier run imported them). */
  alreadyStored: number;
  /** Older than RotationInterval + RetentionDuration: IdentityServer no longer publishes them either. */
  retired: number;
  /** Keys that could not be opened, by reason (source-signing-keys.ts: NOT_IMPORTED). */
  notImported: Record<string, number>;
}

export interface RefreshTokenTally {
  carriedOver: number;
  /** Tokens not carried over, by reason (stock-refresh-tokens.ts: NOT_CARRIED). */
  notCarried: Record<string, number>;
}

export interface ClientReadiness {
  ready: number;
  /** Clients with a setting or grant type the service does not honour (named in the pass's warnings). */
  willNotice: number;
}

export interface PassContext {
  source: Kysely<SourceDatabase>;
  target: Db;
  options: MigrationOptions;
  /** Protects TOTP secrets at rest and keys the recovery-code hashes. */
  dataProtection?: KeyRing;
  /** Migration:SourceDataProtection: how to open what the source protected (its refresh tokens). */
  sourceDataProtection?: SourceDataProtectionSettings;
  /** Migration:SourceSigningKeys: a FileSystemKeyStore folder of the source's signing keys. */
  sourceSigningKeys?: { KeyPath?: string };
}

/**
 * One page of a pass. `until` is the inclusive upper key of the partition the page belongs to: only the user-keyed
 * passes are partitioned (`keyedByUser` in the pass plan); the others run as one partition and ignore it.
 */
export type Pass = (ctx: PassContext, cursor: string | null, until: string | null) => Promise<PageResult>;

/** A key range of source users, (after, until]; null ends are open. Boundaries are user ids, never secrets. */
export interface UserPartition {
  after: string | null;
  until: string | null;
}

/**
 * SQL Server takes at most 2,100 parameters in a statement: a pass that reads child rows through an IN list of a
 * page's keys pages at most this many, whatever Migration:PageSize says.
 */
export const IN_LIST_LIMIT = 2000;

/** The cursor of a user-keyed pass: the last user id of the previous page. */
export const userCursor = (id: string | null): string | null => (id === null ? null : JSON.stringify(id));

/** A write of `attempted` rows that created `written`: the rest existed already (unique keys) and count as skipped. */
export function countWrites(page: PageResult, attempted: number, written: number): void {
  page.created += written;
  page.skipped += attempted - written;
}

export const emptyPage = (): PageResult => ({ read: 0, created: 0, updated: 0, skipped: 0, warnings: [], next: null });

/** The next cursor for a keyset page: the last key when the page was full, else null. */
export function nextCursor<T>(rows: T[], pageSize: number, key: (row: T) => unknown): string | null {
  return rows.length === pageSize ? JSON.stringify(key(rows[rows.length - 1])) : null;
}
