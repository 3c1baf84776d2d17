import type { Kysely } from 'kysely';
import type { SourceDatabase } from '../../source/schema';
import type { Db } from '../../store/database';

/** Everything a run needs to know that may appear in workflow history: no connection string, no key. */
export interface MigrationOptions {
  version: string;
  dryRun: boolean;
  usersMode: 'CreateOnly' | 'Upsert';
  migrateClients: boolean;
  migrateRefreshTokens: boolean;
  sourceGrantKeysAreUnhashed: boolean;
  pageSize: number;
  /** Key-range partitions of the user-keyed passes that run side by side. */
  parallelism: number;
}

export const PASSES = ['roles', 'users', 'user-roles', 'logins', 'mfa', 'scopes', 'clients', 'saml-providers', 'oidc-providers', 'refresh-tokens'] as const;
export type PassName = (typeof PASSES)[number];

/**
 * Source pages are keyset pages written `.orderBy(key).offset(0).fetch(pageSize)`: OFFSET … FETCH NEXT is the one
 * row-limit syntax SQL Server and PostgreSQL share (SQL Server has no LIMIT).
 */
export interface PageResult {
  read: number;
  created: number;
  updated: number;
  skipped: number;
  warnings: string[];
  /** Keyset cursor for the next page; null when the pass is done. */
  next: string | null;
}

export interface PassContext {
  source: Kysely<SourceDatabase>;
  target: Db;
  options: MigrationOptions;
  /** Protects TOTP secrets at rest and keys the recovery-code hashes. */
  dataProtectionKey?: Buffer;
}

/**
 * One page of a pass. `until` is the inclusive upper key of the partition the page belongs to: only the user-keyed
 * passes are partitioned (see USER_KEYED_PASSES); the others run as one partition and ignore it.
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

/** Passes that page through source users and can therefore run as several key-range partitions side by side. */
export const USER_KEYED_PASSES: ReadonlySet<PassName> = new Set(['users', 'user-roles', 'logins', 'mfa']);

/**
 * Migration pages a worker runs at once, and so the source connections it needs: the roles, logins and MFA passes
 * run side by side, each in Migration:Parallelism partitions (2 by default), beside the small passes.
 */
export const MIGRATION_PAGES_AT_ONCE = 16;

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
