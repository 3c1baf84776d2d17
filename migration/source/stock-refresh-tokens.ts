import type { Selectable } from 'kysely';
import { z } from 'zod';
import type { SourceDatabase } from './source-schema';
import {
  DataProtectionError,
  unprotect,
  type DataProtectionKeyRing,
  type UnprotectFailure,
} from '../../platform/security/aspnet-data-protection';
import type { MigratedRefreshTokenData } from '../../platform/store/grants';

/** The purpose IdentityServer's PersistentGrantSerializer protects grant data for (after the application's name). */
export const PERSISTED_GRANT_PURPOSE = 'PersistentGrantSerializer';

/**
 * Why a source refresh token is not carried over, as the report counts them: each names what an operator can do
 * (nothing for an expired or consumed token; the application name or the key ring for the others).
 */
export const NOT_CARRIED = {
  expired: 'expired',
  consumed: 'consumed',
  noSubject: 'no subject (a client-credentials or device token)',
  noKeyRing: 'no key ring (set Migration:SourceDataProtection:KeyRingPath, or keep DataProtectionKeys in the source)',
  noApplicationName: 'no application name (set Migration:SourceDataProtection:ApplicationName)',
  'wrong-purpose': 'wrong application name (the payload does not open for it)',
  'unknown-key': 'missing key (the key that protected it is not in the key ring)',
  'key-revoked': 'revoked key',
  'key-encrypted': 'key encrypted at the source (DPAPI or a certificate)',
  'unsupported-algorithm': 'unsupported key algorithm',
  'not-protected': 'unreadable data',
  unreadable: 'unreadable data',
  unknownVersion: 'unknown payload version',
} as const satisfies Record<string, string> & Record<UnprotectFailure, string>;

export type NotCarriedReason = (typeof NOT_CARRIED)[keyof typeof NOT_CARRIED];

/** A PersistedGrants row, as far as carrying a refresh token over reads it. */
export type SourceGrantRow = Pick<
  Selectable<SourceDatabase['PersistedGrants']>,
  'SubjectId' | 'SessionId' | 'ClientId' | 'CreationTime' | 'Expiration' | 'ConsumedTime' | 'Data'
>;

/** How the source protected its grants: its key ring and application name, when the operator supplied them. */
export interface SourceProtection {
  ring?: DataProtectionKeyRing;
  applicationName?: string;
}

export type Opened =
  | { carried: true; data: MigratedRefreshTokenData; subjectId: string; expiration: Date | null }
  | { carried: false; reason: NotCarriedReason };

/** PersistentGrantSerializer's envelope (Duende IdentityServer 5 and later). */
const container = z.object({
  PersistentGrantDataContainerVersion: z.number(),
  DataProtected: z.boolean(),
  Payload: z.string(),
});

const claim = z.object({ Type: z.string(), Value: z.string() });
/** Duende IdentityServer 6/7's RefreshToken (Version 5): the subject's claims and the authorized scopes. */
const refreshTokenV5 = z.object({
  Version: z.number().int().min(5),
  ClientId: z.string(),
  AuthorizedScopes: z.array(z.string()),
  AuthorizedResourceIndicators: z.array(z.string()).nullish(),
  Subject: z.object({ Claims: z.array(claim) }),
});
/** IdentityServer4 and Duende 5's RefreshToken (Version 4): everything is in the access token it was issued with. */
const refreshTokenV4 = z.object({
  Version: z.literal(4),
  AccessToken: z.object({ ClientId: z.string(), Claims: z.array(claim) }),
});

/** The serialized RefreshToken inside the row's Data: unwrapped and, when protected, opened with the source's ring. */
function serializedToken(data: string, protection: SourceProtection): { json: string } | { reason: NotCarriedReason } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    return { reason: NOT_CARRIED.unreadable };
  }
  const envelope = container.safeParse(parsed);
  // IdentityServer4 stored the RefreshToken itself.
  if (!envelope.success) return { json: data };
  if (!envelope.data.DataProtected) return { json: envelope.data.Payload };
  if (!protection.ring) return { reason: NOT_CARRIED.noKeyRing };
  if (!protection.applicationName) return { reason: NOT_CARRIED.noApplicationName };
  try {
    const payload = Buffer.from(envelope.data.Payload, 'base64url');
    const purposes = [protection.applicationName, PERSISTED_GRANT_PURPOSE];
    return { json: unprotect(protection.ring, purposes, payload).toString('utf8') };
  } catch (error) {
    return { reason: error instanceof DataProtectionError ? NOT_CARRIED[error.reason] : NOT_CARRIED.unreadable };
  }
}

const valuesOf = (claims: Array<{ Type: string; Value: string }>, type: string) =>
  claims.filter((c) => c.Type === type).map((c) => c.Value);

/** What the service's adoption needs of a RefreshToken, from either version's claims. */
function dataOf(token: string): MigratedRefreshTokenData | typeof NOT_CARRIED.unknownVersion {
  let parsed: unknown;
  try {
    parsed = JSON.parse(token);
  } catch {
    return NOT_CARRIED.unknownVersion;
  }
  const v5 = refreshTokenV5.safeParse(parsed);
  const v4 = v5.success ? undefined : refreshTokenV4.safeParse(parsed);
  const claims = v5.success ? v5.data.Subject.Claims : v4?.success ? v4.data.AccessToken.Claims : undefined;
  if (!claims) return NOT_CARRIED.unknownVersion;
  const scopes = v5.success ? v5.data.AuthorizedScopes : valuesOf(claims, 'scope');
  const indicators = v5.success ? (v5.data.AuthorizedResourceIndicators ?? []) : [];
  const authTime = Number(valuesOf(claims, 'auth_time')[0]);
  const amr = valuesOf(claims, 'amr');
  return {
    scope: [...new Set(scopes)].join(' '),
    // A single resource indicator names the API resource its access tokens were for; otherwise the scopes say.
    ...(indicators.length === 1 ? { resource: indicators[0] } : {}),
    ...(Number.isInteger(authTime) ? { authTime } : {}),
    ...(amr.length > 0 ? { amr } : {}),
  };
}

/**
 * A stock IdentityServer's refresh-token row, opened: the data in the service's shape, or why it is not carried over.
 * The row's own columns decide expiry and consumption; its data's subject must be the row's.
 */
/** Why a row is no longer a token anyone holds: consumed or expired at `now`; undefined when it is live. */
export function notLive(row: Pick<SourceGrantRow, 'ConsumedTime' | 'Expiration'>, now: Date) {
  if (row.ConsumedTime) return NOT_CARRIED.consumed;
  if (row.Expiration && row.Expiration <= now) return NOT_CARRIED.expired;
  return undefined;
}

export function openStockRefreshToken(row: SourceGrantRow, protection: SourceProtection, now: Date): Opened {
  const dead = notLive(row, now);
  if (dead) return { carried: false, reason: dead };
  if (!row.SubjectId) return { carried: false, reason: NOT_CARRIED.noSubject };
  const token = serializedToken(row.Data, protection);
  if ('reason' in token) return { carried: false, reason: token.reason };
  const data = dataOf(token.json);
  if (typeof data === 'string' || data.scope === '') return { carried: false, reason: NOT_CARRIED.unknownVersion };
  return { carried: true, data, subjectId: row.SubjectId, expiration: row.Expiration };
}
