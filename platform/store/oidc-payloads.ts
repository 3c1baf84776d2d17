import { randomUUID } from 'node:crypto';
import { sql, type Transaction } from 'kysely';
import type { Db } from './database';
import { unexpired } from './expiry';
import { firstRow, prepared } from './prepared';
import type { Database, SignOutNotice } from './schema';

export type { SignOutNotice };

/**
 * The development cookie keys kept beside the provider's artefacts: the first API process on a database stores
 * `candidate`, every later one (and this one, racing another) reads what the first stored.
 */
export async function storedDevelopmentCookieKeys(db: Db, candidate: string[]): Promise<string[]> {
  await db
    .insertInto('oidc_payloads')
    .values({ model: 'CookieKeys', id: 'development', payload: JSON.stringify({ keys: candidate }) })
    .onConflict((oc) => oc.columns(['model', 'id']).doNothing())
    .execute();
  const row = await db
    .selectFrom('oidc_payloads')
    .select('payload')
    .where('model', '=', 'CookieKeys')
    .where('id', '=', 'development')
    .executeTakeFirstOrThrow();
  return (row.payload as { keys: string[] }).keys;
}

/** What oidc-provider stores of an artefact: its JSON document, and the keys it is found by besides its id. */
export interface OidcPayloadRow {
  model: string;
  id: string;
  payload: string;
  grantId: string | null;
  userCode: string | null;
  uid: string | null;
  expiresAt: Date | null;
}

const UPSERT = prepared(
  (
    db: Db,
    model: string,
    id: string,
    payload: string,
    grantId: string | null,
    userCode: string | null,
    uid: string | null,
    expiresAt: Date | null,
  ) =>
    db
      .insertInto('oidc_payloads')
      .values({ model, id, payload, grant_id: grantId, user_code: userCode, uid, expires_at: expiresAt })
      .onConflict((oc) =>
        oc.columns(['model', 'id']).doUpdateSet({
          payload,
          grant_id: grantId,
          user_code: userCode,
          uid,
          expires_at: expiresAt,
        }),
      ),
);

export async function upsertOidcPayload(db: Db, row: OidcPayloadRow): Promise<void> {
  await db.executeQuery(UPSERT(db, row.model, row.id, row.payload, row.grantId, row.userCode, row.uid, row.expiresAt));
}

const findLiveBy = (by: 'id' | 'user_code' | 'uid') =>
  prepared((db: Db, model: string, value: string) =>
    db
      .selectFrom('oidc_payloads')
      .select(['payload', 'consumed_at'])
      .where('model', '=', model)
      .where(by, '=', value)
      .where(unexpired('expires_at')),
  );
const FIND_LIVE = { id: findLiveBy('id'), user_code: findLiveBy('user_code'), uid: findLiveBy('uid') };

/** An artefact that has not expired, by its id, user code or uid: its document and when it was consumed. */
export function findLiveOidcPayload(db: Db, model: string, by: 'id' | 'user_code' | 'uid', value: string) {
  return firstRow(db, FIND_LIVE[by](db, model, value));
}

/** Several artefacts by model and id (or uid) in one statement; each row says which it is (`key`: its id or uid). */
export function findLiveOidcPayloadsBy(db: Db, by: 'id' | 'uid', keys: Array<{ model: string; value: string }>) {
  return db
    .selectFrom('oidc_payloads')
    .select(['model', 'payload', 'consumed_at'])
    .select(sql.ref<string>(by).as('key'))
    .where((eb) =>
      eb(
        eb.refTuple('model', by),
        'in',
        keys.map((k) => eb.tuple(k.model, k.value)),
      ),
    )
    .where(unexpired('expires_at'))
    .execute();
}

/**
 * Marks an artefact consumed, atomically: `consumed` when this call flipped it, else `reused` with the grant it
 * belongs to (another call consumed it first), or `missing`.
 */
export async function consumeOidcPayload(
  db: Db,
  model: string,
  id: string,
): Promise<{ status: 'consumed' } | { status: 'reused'; grantId: string | null } | { status: 'missing' }> {
  const flipped = await db
    .updateTable('oidc_payloads')
    .set({ consumed_at: sql<Date>`now()` })
    .where('model', '=', model)
    .where('id', '=', id)
    .where('consumed_at', 'is', null)
    .returning('grant_id')
    .executeTakeFirst();
  if (flipped) return { status: 'consumed' };
  const row = await db
    .selectFrom('oidc_payloads')
    .select('grant_id')
    .where('model', '=', model)
    .where('id', '=', id)
    .executeTakeFirst();
  return row ? { status: 'reused', grantId: row.grant_id } : { status: 'missing' };
}

const DELETE = prepared((db: Db, model: string, id: string) =>
  db.deleteFrom('oidc_payloads').where('model', '=', model).where('id', '=', id),
);

export async function deleteOidcPayload(db: Db, model: string, id: string): Promise<void> {
  await db.executeQuery(DELETE(db, model, id));
}

/** The artefacts of one model that belong to a grant. */
export async function deleteOidcPayloadsOfGrant(db: Db, model: string, grantId: string): Promise<void> {
  await db.deleteFrom('oidc_payloads').where('model', '=', model).where('grant_id', '=', grantId).execute();
}

/** Every artefact of the given models that belongs to one of the grants, and the grants themselves (keyed by their own id). */
export async function deleteGrantsWithTokens(
  db: Db,
  grantIds: readonly string[],
  tokenModels: readonly string[],
): Promise<void> {
  if (grantIds.length === 0) return;
  await db
    .deleteFrom('oidc_payloads')
    .where((eb) =>
      eb.or([
        eb.and([eb('grant_id', 'in', grantIds), eb('model', 'in', tokenModels)]),
        eb.and([eb('model', '=', 'Grant'), eb('id', 'in', grantIds)]),
      ]),
    )
    .execute();
}

/** Removes artefacts that expired; run now and then, it keeps the table to what is live. */
export async function purgeExpiredOidcPayloads(db: Db): Promise<number> {
  const result = await db
    .deleteFrom('oidc_payloads')
    .where('expires_at', '<', sql<Date>`now()`)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}

/** The provider's artefacts that sign a user in or stand for a sign-in: ended together by "sign out everywhere". */
const SIGN_IN_MODELS = [
  'Session',
  'Grant',
  'RefreshToken',
  'AuthorizationCode',
  'AccessToken',
  'DeviceCode',
  'BackchannelAuthenticationRequest',
];

/** What ending a user's sign-ins found: how many sessions, and the clients to tell (back-channel logout). */
export interface EndedSignIns {
  sessions: number;
  signOuts: SignOutNotice[];
}

/**
 * The clients of ended sessions that take back-channel logout tokens (an enabled client with a BackChannelLogoutUri),
 * each with the session id its ID tokens carried; a client is told once per session.
 */
async function signOutNoticesOf(trx: Transaction<Database>, sessions: unknown[]): Promise<SignOutNotice[]> {
  const notices = sessions.flatMap((payload) =>
    Object.entries((payload as { authorizations?: Record<string, { sid?: unknown }> }).authorizations ?? {})
      .filter(([, authorization]) => typeof authorization?.sid === 'string')
      .map(([clientId, authorization]) => ({ clientId, sid: authorization.sid as string })),
  );
  if (notices.length === 0) return [];
  const listening = await trx
    .selectFrom('clients')
    .select('client_id')
    .where('client_id', 'in', [...new Set(notices.map((n) => n.clientId))])
    .where('enabled', '=', true)
    .where(sql<string>`coalesce(settings->>'BackChannelLogoutUri', '')`, '<>', '')
    .execute();
  const told = new Set(listening.map((row) => row.client_id));
  return notices.filter((n) => told.has(n.clientId));
}

/**
 * A new security stamp, as ASP.NET Identity's UserManager.UpdateSecurityStampAsync makes one (a GUID in upper case): a
 * source cookie issued under the old one no longer opens a session here (Migration:SourceSessions). Set wherever the
 * user's sessions end (endSignInsIn) and where the second factor changes without that (an admin's removal).
 */
export const newSecurityStamp = () => randomUUID().toUpperCase();

/**
 * Ends every sign-in of the user, inside a transaction the caller holds (a removal ends them with the user): sessions,
 * sign-ins finished but not yet resumed, grants, refresh tokens, codes and opaque access tokens of the provider, refresh tokens carried over by the
 * migration, and (by `users.sessions_revoked_at`) the service's own admin-API tokens issued until now; the user's
 * security stamp changes, so no source session cookie of the user carries over any more.
 */
export async function endSignInsIn(trx: Transaction<Database>, userId: string): Promise<EndedSignIns> {
  // The user's row first: a refresh token being adopted at this moment waits for this end, then sees it
  // (adoptedTokenStands in platform/store/grants.ts).
  await trx
    .updateTable('users')
    .set({ sessions_revoked_at: sql<Date>`now()`, security_stamp: newSecurityStamp() })
    .where('id', '=', userId)
    .execute();
  const ended = await trx
    .deleteFrom('oidc_payloads')
    .where(sql<boolean>`payload ? 'accountId'`)
    .where(sql<string>`payload->>'accountId'`, '=', userId)
    .where('model', 'in', SIGN_IN_MODELS)
    .returning(['model', 'payload'])
    .execute();
  // A sign-in whose steps are done but whose browser has not come back to the provider yet (its interaction holds the
  // result) would become a session when it does: it ends too.
  await trx
    .deleteFrom('oidc_payloads')
    .where('model', '=', 'Interaction')
    .where(sql<string>`payload->'result'->'login'->>'accountId'`, '=', userId)
    .execute();
  await trx.deleteFrom('grants').where('subject_id', '=', userId).execute();
  const sessions = ended.filter((row) => row.model === 'Session').map((row) => row.payload);
  return { sessions: sessions.length, signOuts: await signOutNoticesOf(trx, sessions) };
}

/** Ends every sign-in of the user (endSignInsIn) in a transaction of its own. */
export function endEverySignInOf(db: Db, userId: string): Promise<EndedSignIns> {
  return db.transaction().execute((trx) => endSignInsIn(trx, userId));
}

/**
 * Ends one session of the user, as "sign out everywhere" ends all of them but for this one only: the session, and the
 * grant of each client it authorized with that grant's refresh tokens, codes and opaque access tokens. Answers the
 * clients to tell (back-channel logout); `sessions` is 0 when the user has no such session (ended already, or
 * another's).
 */
export async function endSessionOf(db: Db, userId: string, sessionId: string): Promise<EndedSignIns> {
  return db.transaction().execute(async (trx) => {
    const session = await trx
      .deleteFrom('oidc_payloads')
      .where('model', '=', 'Session')
      .where('id', '=', sessionId)
      .where(sql<boolean>`payload ? 'accountId'`)
      .where(sql<string>`payload->>'accountId'`, '=', userId)
      .returning('payload')
      .executeTakeFirst();
    if (!session) return { sessions: 0, signOuts: [] };
    const authorizations = (session.payload as { authorizations?: Record<string, { grantId?: unknown }> })
      .authorizations;
    const grantIds = Object.values(authorizations ?? {})
      .map((a) => a?.grantId)
      .filter((id): id is string => typeof id === 'string');
    await deleteGrantsWithTokens(trx, grantIds, SIGN_IN_MODELS);
    return { sessions: 1, signOuts: await signOutNoticesOf(trx, [session.payload]) };
  });
}

/** What one client holds for a user: ended together when the user removes that client's access. */
const ACCESS_MODELS = SIGN_IN_MODELS.filter((model) => model !== 'Session');

/**
 * Removes one client's access to the user, as Duende IdentityServer's grants page does ("Revoke access":
 * DefaultIdentityServerInteractionService.RevokeUserConsentAsync, which calls the persisted grant service's
 * RemoveAllGrantsAsync for the subject and the client): every persisted grant of the pair (the remembered consent, and
 * refresh tokens, reference tokens and codes carried over by the migration), and the provider's grants of the pair
 * with their refresh tokens, codes and opaque access tokens. The user's sessions stay signed in; the client's next
 * authorization finds no grant and asks for consent again. JWT access tokens run until they expire, as at Duende.
 * Answers how many things ended.
 */
export async function withdrawAccessOf(db: Db, userId: string, clientId: string): Promise<number> {
  return db.transaction().execute(async (trx) => {
    // The user's row first, as endSignInsIn takes it: a refresh token being adopted at this moment waits for this
    // withdrawal, then sees that its carried-over row is gone (adoptedTokenStands in platform/store/grants.ts).
    await trx.selectFrom('users').select('id').where('id', '=', userId).forUpdate().execute();
    const held = await trx
      .deleteFrom('oidc_payloads')
      .where(sql<boolean>`payload ? 'accountId'`)
      .where(sql<string>`payload->>'accountId'`, '=', userId)
      .where(sql<string>`payload->>'clientId'`, '=', clientId)
      .where('model', 'in', ACCESS_MODELS)
      .returning('id')
      .execute();
    const carried = await trx
      .deleteFrom('grants')
      .where('subject_id', '=', userId)
      .where('client_id', '=', clientId)
      .executeTakeFirst();
    return held.length + Number(carried.numDeletedRows);
  });
}

/**
 * The clients that hold a live refresh token of the user, the provider's (with the scopes it was issued for) or one
 * carried over by the migration (its scopes are sealed in the grant's data: none are listed). A provider's token
 * counts while its grant lives: one a rotation saved just after its grant ended works no more (the provider refuses a
 * refresh token whose grant is gone).
 */
export async function clientsWithRefreshTokensOf(
  db: Db,
  userId: string,
): Promise<Array<{ clientId: string; scopes: string[] }>> {
  const issued = await db
    .selectFrom('oidc_payloads')
    .select([sql<string>`payload->>'clientId'`.as('client_id'), sql<string | null>`payload->>'scope'`.as('scope')])
    .where(sql<boolean>`payload ? 'accountId'`)
    .where(sql<string>`payload->>'accountId'`, '=', userId)
    .where('model', '=', 'RefreshToken')
    .where('consumed_at', 'is', null)
    .where(unexpired('expires_at'))
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom('oidc_payloads as grant')
          .select('grant.id')
          .where('grant.model', '=', 'Grant')
          .whereRef('grant.id', '=', 'oidc_payloads.grant_id'),
      ),
    )
    .execute();
  const carried = await db
    .selectFrom('grants')
    .select(['client_id', sql<string | null>`null`.as('scope')])
    .where('subject_id', '=', userId)
    .where('type', '=', 'refresh_token')
    .where('consumed_time', 'is', null)
    .where(unexpired('expiration'))
    .execute();
  const scopes = new Map<string, Set<string>>();
  for (const row of [...issued, ...carried]) {
    const held = scopes.get(row.client_id) ?? new Set<string>();
    for (const scope of (row.scope ?? '').split(' ')) if (scope) held.add(scope);
    scopes.set(row.client_id, held);
  }
  return [...scopes].map(([clientId, held]) => ({ clientId, scopes: [...held] }));
}

/** The user's live sessions, in no order: when each signed in, and the clients it authorized. */
export async function listSessionsOf(db: Db, userId: string) {
  const rows = await db
    .selectFrom('oidc_payloads')
    .select(['id', 'payload'])
    .where(sql<boolean>`payload ? 'accountId'`)
    .where(sql<string>`payload->>'accountId'`, '=', userId)
    .where('model', '=', 'Session')
    .where(unexpired('expires_at'))
    .execute();
  return rows.map((row) => {
    const payload = row.payload as { loginTs?: number; authorizations?: Record<string, unknown> };
    return {
      id: row.id,
      signedInAt: payload.loginTs ? new Date(payload.loginTs * 1000) : undefined,
      clientIds: Object.keys(payload.authorizations ?? {}),
    };
  });
}
