import { createHash } from 'node:crypto';
import { unprotectText, type KeyRing } from '../../platform/security/data-protection';
import { persistedGrantKeys } from '../../platform/security/persisted-grant-keys';
import type { Db } from '../../platform/store/database';
import {
  adoptedTokenStands,
  findMigratedRefreshTokenKey,
  migratedRefreshTokenData,
  retireMigratedRefreshToken,
  takeMigratedRefreshToken,
  type MigratedRefreshTokenData,
} from '../../platform/store/grants';
import type { AdapterPayload, OidcAdapter } from './adapter';
import { RESOURCE_PREFIX } from './resources';
import { logger } from '../../platform/observability/logger';

export interface AdoptionDependencies {
  db: Db;
  /** The service's ring, which seals the data of tokens carried over from a stock IdentityServer. */
  ring: KeyRing;
  /** The adapters of the two models an adopted token becomes. */
  refreshTokens: OidcAdapter;
  grants: OidcAdapter;
  identityScopes: ReadonlySet<string>;
  /** The API resource whose scopes a token names, when its data does not say. */
  resourceOf: (scopes: string[]) => Promise<string | undefined>;
  /**
   * During the read-through window: whether the source still holds the token a sweep carried over (under this key)
   * live. A token it consumed, revoked or let expire since the sweep is not adopted once. Throws when it cannot say.
   */
  liveAtSource?: (key: string) => Promise<boolean>;
}

const epoch = (date: Date) => Math.floor(date.getTime() / 1000);

/**
 * A refresh token the migration copied (`grants`, with its handle verbatim), adopted at its first use: written as
 * oidc-provider's RefreshToken and Grant, and marked consumed in `grants` so it is adopted once. From then on it
 * lives like any other refresh token (rotated or reused as its client says). Undefined when no live migrated token
 * has this handle, its user was deleted, deactivated or signed out since it was issued, the source no longer holds it
 * live (in the read-through window), or its data is not in the service's shape.
 */
export async function adoptMigratedRefreshToken(
  deps: AdoptionDependencies,
  handle: string,
): Promise<AdapterPayload | undefined> {
  const { db } = deps;
  const keys = persistedGrantKeys(handle);
  if (deps.liveAtSource) {
    const key = await findMigratedRefreshTokenKey(db, handle, keys);
    if (key !== undefined && !(await deps.liveAtSource(key))) {
      await retireMigratedRefreshToken(db, key);
      return undefined;
    }
  }
  const row = await takeMigratedRefreshToken(db, handle, keys);
  if (!row) return undefined;
  let data: MigratedRefreshTokenData;
  try {
    data = migratedRefreshTokenData.parse(JSON.parse(row.data_sealed ? unprotectText(row.data, deps.ring) : row.data));
  } catch {
    logger.warn(`sign-in: migrated refresh token of client ${row.client_id} has data not in the service's shape`);
    return undefined;
  }
  const scopes = data.scope.split(' ').filter(Boolean);
  const apiScopes = scopes.filter((s) => !deps.identityScopes.has(s));
  const resource = data.resource ?? (apiScopes.length > 0 ? await deps.resourceOf(apiScopes) : undefined);
  const indicator = resource ? `${RESOURCE_PREFIX}${resource}` : undefined;
  const iat = epoch(row.creation_time);
  const exp = row.expiration ? epoch(row.expiration) : undefined;
  const expiresIn = exp === undefined ? undefined : exp - epoch(new Date());
  const grantId = `migrated-${createHash('sha256').update(handle).digest('base64url').slice(0, 32)}`;
  await deps.grants.upsert(
    grantId,
    {
      kind: 'Grant',
      jti: grantId,
      accountId: row.subject_id!,
      clientId: row.client_id,
      openid: { scope: scopes.filter((s) => deps.identityScopes.has(s)).join(' ') },
      ...(indicator ? { resources: { [indicator]: apiScopes.join(' ') } } : {}),
      iat,
      ...(exp === undefined ? {} : { exp }),
    },
    expiresIn,
  );
  const token: AdapterPayload = {
    kind: 'RefreshToken',
    jti: handle,
    accountId: row.subject_id!,
    clientId: row.client_id,
    grantId,
    gty: 'authorization_code',
    scope: scopes.join(' '),
    rotations: 0,
    iat,
    // The first issue, at the source: the absolute end of every successor is measured from it
    // (provider-configuration/ttl.ts).
    iiat: iat,
    ...(exp === undefined ? {} : { exp }),
    ...(indicator ? { resource: indicator } : {}),
    ...(data.authTime === undefined ? {} : { authTime: data.authTime }),
    ...(data.amr ? { amr: data.amr } : {}),
  };
  await deps.refreshTokens.upsert(handle, token, expiresIn);
  // Taken before an end of the user's access (a sign-out everywhere, a "Remove access") and written after it, the
  // token would outlive that end: it is undone instead.
  if (!(await adoptedTokenStands(db, row.key, row.subject_id!))) {
    await deps.refreshTokens.destroy(handle);
    await deps.grants.destroy(grantId);
    return undefined;
  }
  return token;
}
