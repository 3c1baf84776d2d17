import { sql } from 'kysely';
import type { Db } from './database';

/** The public part of a stored signing key, by its key id. */
export async function findSigningPublicKey(db: Db, kid: string) {
  const row = await db.selectFrom('signing_keys').select('jwk').where('id', '=', kid).executeTakeFirst();
  if (!row) return undefined;
  const { kty, n, e } = row.jwk as { kty?: string; n?: string; e?: string };
  return { kty, n, e };
}

/** Marks a JWT access token revoked until it would have expired (a second revocation changes nothing). */
export async function revokeAccessToken(db: Db, jti: string, expiresAt: Date): Promise<void> {
  await db
    .insertInto('revoked_access_tokens')
    .values({ jti, expires_at: expiresAt })
    .onConflict((oc) => oc.column('jti').doNothing())
    .execute();
}

export async function purgeRevokedAccessTokens(db: Db): Promise<void> {
  await db
    .deleteFrom('revoked_access_tokens')
    .where('expires_at', '<', sql<Date>`now()`)
    .execute();
}

/**
 * Whether the store still stands behind an admin-API token now: not revoked, and either an active user who holds the
 * role through a role assignment and has not been signed out everywhere since, or an enabled client that is still
 * allowed the scope. One query, at every request.
 */
export async function adminTokenStands(
  db: Db,
  token: { jti: string; userId?: string; clientId: string; issuedAt: number },
  role: string,
): Promise<boolean> {
  const revoked = db.selectFrom('revoked_access_tokens').select('jti').where('jti', '=', token.jti);
  const standing =
    token.userId !== undefined
      ? db
          .selectFrom('users')
          .innerJoin('user_roles', 'user_roles.user_id', 'users.id')
          .innerJoin('roles', 'roles.id', 'user_roles.role_id')
          .select('users.id')
          .where('users.id', '=', token.userId)
          .where('users.active', '=', true)
          .where('roles.name', '=', role)
          // "Sign out everywhere" ends the tokens issued until then (iat counts whole seconds: one issued in the same
          // second counts as issued before).
          .where((eb) =>
            eb.or([
              eb('users.sessions_revoked_at', 'is', null),
              eb('users.sessions_revoked_at', '<', sql<Date>`to_timestamp(${token.issuedAt})`),
            ]),
          )
      : db
          .selectFrom('clients')
          .select('client_id')
          .where('client_id', '=', token.clientId)
          .where('enabled', '=', true)
          .where(sql<boolean>`allowed_scopes ? ${role}`);
  const { rows } = await sql<{ ok: boolean }>`select (not exists (${revoked}) and exists (${standing})) as ok`.execute(
    db,
  );
  return rows[0]?.ok === true;
}
