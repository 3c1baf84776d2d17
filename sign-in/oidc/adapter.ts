import { errors } from 'oidc-provider';
import { findJsonProblem, MAX_JSON_DEPTH } from '../../platform/security/object-keys';
import { TEXT_PROBLEM_MESSAGES, textProblem } from '../../platform/security/storable-text';
import type { Db } from '../../platform/store/database';
import {
  consumeOidcPayload,
  deleteGrantsWithTokens,
  deleteOidcPayload,
  deleteOidcPayloadsOfGrant,
  findLiveOidcPayload,
  findLiveOidcPayloadsBy,
  upsertOidcPayload,
} from '../../platform/store/oidc-payloads';

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

/**
 * What in a payload the store cannot hold (a NUL or a lone surrogate in any value a client sent: a device
 * authorization's login_hint, an authorization's nonce), refused as the client's invalid request before it is
 * written, whichever model carries it; PostgreSQL would refuse it, a 500 for what is only bad input.
 */
function refuseUnstorable(payload: AdapterPayload): void {
  const problem = findJsonProblem(payload, MAX_JSON_DEPTH);
  if (!problem) return;
  const field = problem.path.replace(/^params\./, '');
  const rule =
    problem.problem === 'forbidden-key'
      ? 'this key name is not allowed'
      : problem.problem === 'too-deep'
        ? `nested deeper than ${MAX_JSON_DEPTH} levels`
        : TEXT_PROBLEM_MESSAGES[problem.problem];
  throw new errors.InvalidRequest(`${field}: ${rule}`);
}

/** When a stored artefact expires; a lifetime no date can hold is a fault with its cause named, not a driver error. */
function expiryOf(model: string, expiresIn: number | undefined): Date | null {
  if (typeof expiresIn !== 'number') return null;
  const expiresAt = new Date(Date.now() + expiresIn * 1000);
  if (Number.isNaN(expiresAt.getTime()))
    throw new Error(`oidc store: a ${model} expiring in ${expiresIn} seconds cannot be stored (no date is that far)`);
  return expiresAt;
}

/** The models oidc-provider's revocation of a grant removes (lib/helpers/revoke.js). */
const GRANT_TOKEN_MODELS = [
  'AccessToken',
  'RefreshToken',
  'AuthorizationCode',
  'DeviceCode',
  'BackchannelAuthenticationRequest',
  'PreAuthorizedCode',
];

type PayloadRow = { payload: unknown; consumed_at: Date | null };
/** An artefact read by id (or uid), and the other models the same key was found as in the same statement. */
export interface FoundById {
  row: PayloadRow | undefined;
  alsoFoundAs: string[];
}

type Key = 'id' | 'uid';
type Finder = (model: string, value: string) => Promise<FoundById>;
const batches = new WeakMap<Db, Record<Key, Finder>>();

/**
 * The reads by id (or by uid) asked for in one turn of the event loop, in one statement: oidc-provider looks a
 * presented token up as an access token, a client-credentials token and a refresh token at once (introspection and
 * revocation without a `token_type_hint`), and concurrent requests' reads share the round trip too. Each caller gets
 * a payload of its own (a copy where two asked for the same artefact), since oidc-provider changes what it reads.
 */
function batchedFinder(db: Db, by: Key): Finder {
  type Waiter = { model: string; value: string; done: (found: FoundById) => void; fail: (e: unknown) => void };
  let queue: Waiter[] = [];
  const readAlone = ({ model, value, done, fail }: Waiter) =>
    findLiveOidcPayload(db, model, by, value).then((row) => done({ row, alsoFoundAs: [] }), fail);
  const flush = async () => {
    const batch = queue;
    queue = [];
    if (batch.length === 1) return readAlone(batch[0]);
    try {
      const keys = [
        ...new Map(batch.map((w) => [`${w.model}\n${w.value}`, { model: w.model, value: w.value }])).values(),
      ];
      const rows = await findLiveOidcPayloadsBy(db, by, keys);
      const handedOut = new Set<PayloadRow>();
      for (const waiter of batch) {
        const found = rows.find((r) => r.model === waiter.model && r.key === waiter.value);
        const row = found && handedOut.has(found) ? { ...found, payload: structuredClone(found.payload) } : found;
        if (found) handedOut.add(found);
        const alsoFoundAs = rows.filter((r) => r.key === waiter.value && r.model !== waiter.model).map((r) => r.model);
        waiter.done({ row, alsoFoundAs });
      }
    } catch {
      // A statement shared by several requests fails none of them for good: each is read again on its own (a lost
      // connection is not reused), so a failure stays with the request whose own read fails.
      for (const waiter of batch) void readAlone(waiter);
    }
  };
  return (model, value) =>
    new Promise<FoundById>((done, fail) => {
      if (queue.length === 0) setImmediate(() => void flush());
      queue.push({ model, value, done, fail });
    });
}

function finders(db: Db): Record<Key, Finder> {
  let found = batches.get(db);
  if (!found) {
    found = { id: batchedFinder(db, 'id'), uid: batchedFinder(db, 'uid') };
    batches.set(db, found);
  }
  return found;
}

/** An artefact by model and id, read together with the other reads by id of this turn of the event loop. */
export const findById = (db: Db, model: string, id: string): Promise<FoundById> => finders(db).id(model, id);

/** A stored artefact as oidc-provider reads it: its payload, with when it was consumed. */
export const withConsumed = (row: PayloadRow | undefined): AdapterPayload | undefined =>
  row && {
    ...(row.payload as AdapterPayload),
    ...(row.consumed_at ? { consumed: Math.floor(row.consumed_at.getTime() / 1000) } : {}),
  };

/** Models whose reads come from elsewhere than `oidc_payloads` (clients from the clients store). */
export type ModelOverrides = Partial<Record<string, Partial<OidcAdapter>>>;

/**
 * Every provider artefact (sessions, interactions, codes, tokens, grants, replay records) in `oidc_payloads`, so API
 * processes behind one URL share them and a restart signs nobody out. Expired rows are never returned and are purged.
 */
export function createPostgresAdapter(db: Db, overrides: ModelOverrides = {}) {
  return (model: string): OidcAdapter => {
    const findBy = async (by: 'id' | 'user_code' | 'uid', value: string) => {
      if (!isStorableKey(value)) return undefined;
      if (by === 'user_code') return withConsumed(await findLiveOidcPayload(db, model, by, value));
      return withConsumed((await finders(db)[by](model, value)).row);
    };
    return {
      async upsert(id, payload, expiresIn) {
        refuseUnstorable(payload);
        const expiresAt = expiryOf(model, expiresIn);
        await upsertOidcPayload(db, {
          model,
          id,
          payload: JSON.stringify(payload),
          grantId: payload.grantId ?? null,
          userCode: payload.userCode ?? null,
          uid: payload.uid ?? null,
          expiresAt,
        });
      },
      find: (id) => findBy('id', id),
      findByUserCode: (userCode) => findBy('user_code', userCode),
      findByUid: (uid) => findBy('uid', uid),
      /**
       * oidc-provider reads a code or refresh token, sees it unconsumed, then consumes it: two redemptions racing each
       * other would both pass the read. The consumption is therefore the atomic step: only the one that flips it goes
       * on; the other is a detected reuse, which revokes the whole grant (every token of it and the grant, as
       * oidc-provider's revoke does for a reuse it sees itself) and fails with invalid_grant.
       */
      async consume(id) {
        const consumed = await consumeOidcPayload(db, model, id);
        if (consumed.status === 'consumed') return;
        if (consumed.status === 'reused' && consumed.grantId)
          await deleteGrantsWithTokens(db, [consumed.grantId], GRANT_TOKEN_MODELS);
        throw new errors.InvalidGrant(
          `${model === 'RefreshToken' ? 'refresh token' : 'authorization code'} already used`,
        );
      },
      destroy: (id) => deleteOidcPayload(db, model, id),
      // Only this model's rows: an interaction or a session also names its grant, and must outlive a revocation (the
      // sign-out that precedes switching accounts revokes the grant while the interaction goes on).
      revokeByGrantId: (grantId) => deleteOidcPayloadsOfGrant(db, model, grantId),
      ...overrides[model],
    };
  };
}
