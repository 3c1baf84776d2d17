/**
 * Which signing keys the JWKS publishes and which one signs, at a given moment: Duende IdentityServer's automatic key
 * management (KeyManager.cs, `Services/Default/KeyManagement/`), as a pure function of the keys' times so that every
 * instance, looking at the same rows, reaches the same answer without talking to the others.
 *
 * - A key is announced (published, not signing) until it is PropagationTime old, signs until it is RotationInterval
 *   old, and is retained (published, not signing) for RetentionDuration after that; then it is retired: neither
 *   published nor kept.
 * - Each algorithm has its own signing key (KeyManager.GetAllCurrentSigningKeys groups by algorithm): the oldest key
 *   of that algorithm within its signing phase (GetCurrentSigningKeyInternal orders by creation). A key that arrived
 *   in the store (a migration, an import) less than two key-cache looks ago does not sign yet, whatever its age: an
 *   instance that has not looked since would not publish it.
 * - With none in its signing phase, KeyManager.GetCurrentSigningKey ignores the activation delay: the oldest key not
 *   yet past RotationInterval signs (a fresh store's first key signs at once; no one yet holds a token to fail).
 * - A static key (imported by hand, IdentityServer's AddSigningCredential) never expires and wins over managed keys of
 *   its algorithm (DefaultKeyMaterialService asks the key manager only when no static credential has the algorithm);
 *   the newest one that every instance has seen signs.
 */
export type KeyManagementTimes = {
  RotationInterval: number;
  PropagationTime: number;
  RetentionDuration: number;
  KeyCacheDuration: number;
};

export type KeyOrigin = 'generated' | 'migrated' | 'static';

export type TimedKey = { id: string; algorithm: string; createdAt: Date; storedAt: Date; origin: KeyOrigin };

/** The algorithm rotation makes keys for and tokens are signed with unless a client asks otherwise. */
export const ROTATED_ALGORITHM = 'RS256';

/** Older than RotationInterval + RetentionDuration: a migration does not import it and rotation deletes it. */
export function isRetired(createdAt: Date, now: Date, times: KeyManagementTimes): boolean {
  return now.getTime() - createdAt.getTime() > times.RotationInterval + times.RetentionDuration;
}

const seenByEveryInstance = (key: TimedKey, now: Date, times: KeyManagementTimes) =>
  now.getTime() - key.storedAt.getTime() >= 2 * times.KeyCacheDuration;

const ageOf = (key: TimedKey, now: Date) => now.getTime() - key.createdAt.getTime();

const byAge = (a: TimedKey, b: TimedKey) =>
  a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/** First stored first: of keys no instance may have seen yet, the one stored earliest is likeliest to be published. */
const byArrival = (a: TimedKey, b: TimedKey) => a.storedAt.getTime() - b.storedAt.getTime() || byAge(a, b);

/** The signing key among the published keys of one algorithm (oldest first), by the rules above. */
function signerOf<K extends TimedKey>(keys: K[], now: Date, times: KeyManagementTimes): K | undefined {
  const seen = (k: K) => seenByEveryInstance(k, now, times);
  const statics = keys.filter((k) => k.origin === 'static');
  const managed = keys.filter((k) => k.origin !== 'static');
  const notExpired = (k: K) => ageOf(k, now) <= times.RotationInterval;
  return (
    [...statics].reverse().find(seen) ??
    managed.find((k) => seen(k) && notExpired(k) && ageOf(k, now) >= times.PropagationTime) ??
    managed.find((k) => seen(k) && notExpired(k)) ??
    // Nothing seen everywhere yet (a fresh store, or keys imported moments after the first was made): the key that
    // arrived first, not the oldest by creation, which may have been stored a moment ago and be unknown elsewhere.
    [...statics].sort(byArrival)[0] ??
    managed.filter(notExpired).sort(byArrival)[0] ??
    managed.at(-1)
  );
}

/** The moments at which a key's phase or its being seen everywhere changes. */
function boundariesOf(key: TimedKey, times: KeyManagementTimes): number[] {
  const created = key.createdAt.getTime();
  const seen = key.storedAt.getTime() + 2 * times.KeyCacheDuration;
  if (key.origin === 'static') return [seen];
  return [
    seen,
    created + times.PropagationTime,
    created + times.RotationInterval + 1,
    created + times.RotationInterval + times.RetentionDuration + 1,
  ];
}

/**
 * The keys to publish at `now` with the signing key of each algorithm before the other keys of its algorithm (the
 * RS256 one first of all: oidc-provider signs with the first key of an algorithm in its key set), `signing` the RS256
 * signing key (or, with no RS256 key, another algorithm's), and the next moment at which that answer may change by
 * time alone (a phase boundary), so an instance knows when to look again without a change in the store.
 */
export function signingKeysAt<K extends TimedKey>(
  keys: readonly K[],
  now: Date,
  times: KeyManagementTimes,
): { published: K[]; signing: K | undefined; changesAt: Date | undefined } {
  const published = keys.filter((k) => k.origin === 'static' || !isRetired(k.createdAt, now, times)).sort(byAge);
  const algorithms = [...new Set(published.map((k) => k.algorithm))].sort((a, b) =>
    a === ROTATED_ALGORITHM ? -1 : b === ROTATED_ALGORITHM ? 1 : a < b ? -1 : a > b ? 1 : 0,
  );
  const signers = algorithms.map((alg) =>
    signerOf(
      published.filter((k) => k.algorithm === alg),
      now,
      times,
    )!,
  );
  const next = keys
    .flatMap((k) => boundariesOf(k, times))
    .filter((t) => t > now.getTime())
    .sort((a, b) => a - b)[0];
  return {
    published: [...signers, ...published.filter((k) => !signers.includes(k))],
    signing: signers[0],
    changesAt: next === undefined ? undefined : new Date(next),
  };
}

/**
 * When the next key will be due if none is made before (the youngest RS256 key reaches RotationInterval −
 * PropagationTime), or undefined when a static key signs; a moment already past means now.
 */
export function nextKeyDueAt(keys: readonly TimedKey[], now: Date, times: KeyManagementTimes): Date | undefined {
  const rotated = keys.filter((k) => k.algorithm === ROTATED_ALGORITHM);
  if (rotated.some((k) => k.origin === 'static')) return undefined;
  const managed = rotated.filter((k) => !isRetired(k.createdAt, now, times));
  if (managed.length === 0) return now;
  const youngest = Math.max(...managed.map((k) => k.createdAt.getTime()));
  return new Date(youngest + times.RotationInterval - times.PropagationTime);
}

/**
 * Whether a new key is due (KeyManager.IsKeyRotationRequired, for the one algorithm rotation keeps): no RS256 key
 * may sign, or the youngest one has no more than PropagationTime of its signing phase left, so a successor must be
 * announced now to be known everywhere when it takes over. A static RS256 key signs in their place: none is due.
 */
export function isNewKeyDue(keys: readonly TimedKey[], now: Date, times: KeyManagementTimes): boolean {
  const due = nextKeyDueAt(keys, now, times);
  return due !== undefined && due.getTime() <= now.getTime();
}

/**
 * When rotation next has work, if nothing arrives before: a new key due, or a managed key past its retention (to be
 * deleted). Undefined when neither will ever happen (static keys only).
 */
export function nextRotationAt(keys: readonly TimedKey[], now: Date, times: KeyManagementTimes): Date | undefined {
  const retirements = keys
    .filter((k) => k.origin !== 'static')
    .map((k) => k.createdAt.getTime() + times.RotationInterval + times.RetentionDuration + 1);
  const due = nextKeyDueAt(keys, now, times)?.getTime();
  const moments = [...retirements, ...(due === undefined ? [] : [due])];
  return moments.length === 0 ? undefined : new Date(Math.min(...moments));
}
