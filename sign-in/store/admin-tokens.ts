import { sql } from 'kysely';
import type { Db } from '../../platform/store/database';

/** The public part of a stored signing key (RSA or EC) and its algorithm, by its key id. */
export async function findSigningPublicKey(db: Db, kid: string) {
  const row = await db.selectFrom('signing_keys').select(['jwk', 'algorithm']).where('id', '=', kid).executeTakeFirst();
  if (!row) return undefined;
  const { kty, n, e, crv, x, y } = row.jwk as Record<string, string | undefined>;
  return { algorithm: row.algorithm, jwk: kty === 'EC' ? { kty, crv, x, y } : { kty, n, e } };
}

/** Whether a JWT access token was revoked (listed until it would have expired). */
export async function isAccessTokenRevoked(db: Db, jti: string): Promise<boolean> {
  const row = await db.selectFrom('revoked_access_tokens').select('jti').where('jti', '=', jti).executeTakeFirst();
  return row !== undefined;
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
 * Whether the store still stands behind an admin-API token now: `revoked` when the token was revoked or its user signed
 * out everywhere since it was issued (the token is no longer valid); `lacks-right` when it was not, but neither an
 * active user who holds the role through a role assignment nor an enabled client still allowed the scope is behind
 * it; else `stands`. One query, at every request.
 */
export async function adminTokenStanding(
  db: Db,
  token: { jti: string; userId?: string; clientId: string; issuedAt: number },
  role: string,
): Promise<'stands' | 'revoked' | 'lacks-right'> {
  const revoked = db.selectFrom('revoked_access_tokens').select('jti').where('jti', '=', token.jti);
  // "Sign out everywhere" ends the tokens issued until then (iat counts whole seconds: one issued in the same second
  // counts as issued before).
  const signedOut =
    token.userId === undefined
      ? sql<boolean>`false`
      : sql<boolean>`exists (${db
          .selectFrom('users')
          .select('id')
          .where('id', '=', token.userId)
          .where('sessions_revoked_at', '>=', sql<Date>`to_timestamp(${token.issuedAt})`)})`;
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
      : db
          .selectFrom('clients')
          .select('client_id')
          .where('client_id', '=', token.clientId)
          .where('enabled', '=', true)
          .where(sql<boolean>`allowed_scopes ? ${role}`);
  const { rows } = await sql<{ revoked: boolean; ok: boolean }>`select
      (exists (${revoked}) or ${signedOut}) as revoked,
      exists (${standing}) as ok`.execute(db);
  if (rows[0]?.revoked) return 'revoked';
  return rows[0]?.ok ? 'stands' : 'lacks-right';
}

/**
 * Who stands behind an admin page's sign-in now: `admin` when the user is active and holds `role` through a role
 * assignment, `lacks-right` when active without it, `gone` when the user is deleted or deactivated or was signed out
 * everywhere since the sign-in (`signedInAt`, whole seconds). Its e-mail, for the page, when not gone.
 */
export async function adminPageStanding(
  db: Db,
  userId: string,
  signedInAt: number,
  role: string,
): Promise<{ standing: 'admin' | 'lacks-right'; email: string } | { standing: 'gone' }> {
  const row = await db
    .selectFrom('users')
    .select([
      'email',
      (eb) =>
        eb
          .exists(
            eb
              .selectFrom('user_roles')
              .innerJoin('roles', 'roles.id', 'user_roles.role_id')
              .whereRef('user_roles.user_id', '=', 'users.id')
              .where('roles.name', '=', role),
          )
          .as('holds'),
    ])
    .where('id', '=', userId)
    .where('active', '=', true)
    .where((eb) =>
      eb.or([
        eb('sessions_revoked_at', 'is', null),
        eb('sessions_revoked_at', '<', sql<Date>`to_timestamp(${signedInAt})`),
      ]),
    )
    .executeTakeFirst();
  if (!row) return { standing: 'gone' };
  return { standing: row.holds ? 'admin' : 'lacks-right', email: row.email };
}
