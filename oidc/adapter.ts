import { sql } from 'kysely';
import { errors } from 'oidc-provider';
import { textProblem } from '../security/storable-text';
import type { Db } from '../store/database';

/** What oidc-provider stores through an adapter: one JSON document per artefact. */
export type AdapterPayload = Record<string, unknown> & {
  grantId?: string;
  userCode?: string;
  uid?: string;
  consumed?: number;
};

/** oidc-provider's adapter interface (https://github.com/panva/node-oidc-provider/blob/main/example/my_adapter.js). */
export interface OidcAdapter {
  upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void>;
  find(id: string): Promise<AdapterPayload | undefined>;
  findByUserCode(userCode: string): Promise<AdapterPayload | undefined>;
  findByUid(uid: string): Promise<AdapterPayload | undefined>;
  consume(id: string): Promise<void>;
  destroy(id: string): Promise<void>;
  revokeByGrantId(grantId: string): Promise<void>;
}

/**
 * Whether a value presented as a key (a code, a token, a client id, an interaction uid) could be one the store holds:
 * one with a NUL or a lone surrogate, or absurdly long, names nothing, so it is not found rather than sent to
 * PostgreSQL (which would refuse it, a 500 for what is only a wrong token).
 */
export const isStorableKey = (key: unknown): key is string =>
  typeof key === 'string' && key.length <= 1024 && textProblem(key) === undefined;

/** The models oidc-provider's revocation of a grant removes (lib/helpers/revoke.js). */
const GRANT_TOKEN_MODELS = [
  'AccessToken',
  'RefreshToken',
  'AuthorizationCode',
  'DeviceCode',
  'BackchannelAuthenticationRequest',
  'PreAuthorizedCode',
];

/** Models whose reads come from elsewhere than `oidc_payloads` (clients from the clients store). */
export type ModelOverrides = Partial<Record<string, Partial<OidcAdapter>>>;

/**
 * Every provider artefact (sessions, interactions, codes, tokens, grants, replay records) in `oidc_payloads`, so API
 * processes behind one URL share them and a restart signs nobody out. Expired rows are never returned and are purged.
 */
export function createPostgresAdapter(db: Db, overrides: ModelOverrides = {}) {
  const live = (model: string) =>
    db
      .selectFrom('oidc_payloads')
      .select(['payload', 'consumed_at'])
      .where('model', '=', model)
      .where((eb) => eb.or([eb('expires_at', 'is', null), eb('expires_at', '>', sql<Date>`now()`)]));

  const withConsumed = (row: { payload: unknown; consumed_at: Date | null } | undefined): AdapterPayload | undefined =>
    row && {
      ...(row.payload as AdapterPayload),
      ...(row.consumed_at ? { consumed: Math.floor(row.consumed_at.getTime() / 1000) } : {}),
    };

  /** Every token of a grant and the grant itself (oidc-provider keys a Grant by its own id), as its revoke does. */
  const revokeGrant = async (grantId: string) => {
    await db
      .deleteFrom('oidc_payloads')
      .where((eb) =>
        eb.or([
          eb.and([eb('grant_id', '=', grantId), eb('model', 'in', GRANT_TOKEN_MODELS)]),
          eb.and([eb('model', '=', 'Grant'), eb('id', '=', grantId)]),
        ]),
      )
      .execute();
  };

  return (model: string): OidcAdapter => ({
    async upsert(id, payload, expiresIn) {
      const row = {
        model,
        id,
        payload: JSON.stringify(payload),
        grant_id: payload.grantId ?? null,
        user_code: payload.userCode ?? null,
        uid: payload.uid ?? null,
        expires_at: typeof expiresIn === 'number' ? new Date(Date.now() + expiresIn * 1000) : null,
      };
      await db
        .insertInto('oidc_payloads')
        .values(row)
        .onConflict((oc) =>
          oc.columns(['model', 'id']).doUpdateSet({
            payload: row.payload,
            grant_id: row.grant_id,
            user_code: row.user_code,
            uid: row.uid,
            expires_at: row.expires_at,
          }),
        )
        .execute();
    },
    async find(id) {
      if (!isStorableKey(id)) return undefined;
      return withConsumed(await live(model).where('id', '=', id).executeTakeFirst());
    },
    async findByUserCode(userCode) {
      if (!isStorableKey(userCode)) return undefined;
      return withConsumed(await live(model).where('user_code', '=', userCode).executeTakeFirst());
    },
    async findByUid(uid) {
      if (!isStorableKey(uid)) return undefined;
      return withConsumed(await live(model).where('uid', '=', uid).executeTakeFirst());
    },
    /**
     * oidc-provider reads a code or refresh token, sees it unconsumed, then consumes it: two redemptions racing each
     * other would both pass the read. The consumption is therefore the atomic step: only the one that flips
     * `consumed_at` goes on; the other is a detected reuse, which revokes the whole grant (as oidc-provider does for
     * a reuse it sees itself) and fails with invalid_grant.
     */
    async consume(id) {
      const flipped = await db
        .updateTable('oidc_payloads')
        .set({ consumed_at: sql<Date>`now()` })
        .where('model', '=', model)
        .where('id', '=', id)
        .where('consumed_at', 'is', null)
        .returning('grant_id')
        .executeTakeFirst();
      if (flipped) return;
      const row = await db
        .selectFrom('oidc_payloads')
        .select('grant_id')
        .where('model', '=', model)
        .where('id', '=', id)
        .executeTakeFirst();
      if (row?.grant_id) await revokeGrant(row.grant_id);
      throw new errors.InvalidGrant(
        `${model === 'RefreshToken' ? 'refresh token' : 'authorization code'} already used`,
      );
    },
    async destroy(id) {
      await db.deleteFrom('oidc_payloads').where('model', '=', model).where('id', '=', id).execute();
    },
    // Only this model's rows: an interaction or a session also names its grant, and must outlive a revocation (the
    // sign-out that precedes switching accounts revokes the grant while the interaction goes on).
    async revokeByGrantId(grantId) {
      await db.deleteFrom('oidc_payloads').where('model', '=', model).where('grant_id', '=', grantId).execute();
    },
    ...overrides[model],
  });
}

/** Removes artefacts that expired; run now and then, it keeps the table to what is live. */
export async function purgeExpiredOidcPayloads(db: Db): Promise<number> {
  const result = await db
    .deleteFrom('oidc_payloads')
    .where('expires_at', '<', sql<Date>`now()`)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
