/**
 * Which signing keys the JWKS publishes and which one signs, at a given moment: Duende IdentityServer's automatic key
 * management (KeyManager.cs, `Services/Default/KeyManagement/`), as a pure function of the keys' times so that every
 * instance, looking at the same rows, reaches the same answer without talking to the others.
 *
 * - A key is announced (published, not signing) until it is PropagationTime old, signs until it is RotationInterval
 *   old, and is retained (published, not signing) for RetentionDuration after that; then it is retired: neither
 *   published nor kept.
 * - The signing key is the oldest key within its signing phase. A key that arrived in the store (a migration, an
 *   import) less than two key-cache looks ago does not sign yet, whatever its age: an instance that has not looked
 *   since would not publish it.
 * - A static key (imported by hand, IdentityServer's AddSigningCredential) never expires; the newest one that every
 *   instance has seen signs.
 * - With no key in its signing phase (a fresh store, or a store whose keys all arrived just now), the oldest published
 *   key signs: there is no one yet whose tokens could fail.
 */
export type KeyManagementTimes = {
  RotationInterval: number;
  PropagationTime: number;
  RetentionDuration: number;
  KeyCacheDuration: number;
};

export type KeyOrigin = 'generated' | 'migrated' | 'static';

export type TimedKey = { id: string; createdAt: Date; storedAt: Date; origin: KeyOrigin };

/** Older than RotationInterval + RetentionDuration: a migration does not import it and rotation deletes it. */
export function isRetired(createdAt: Date, now: Date, times: KeyManagementTimes): boolean {
  return now.getTime() - createdAt.getTime() > times.RotationInterval + times.RetentionDuration;
}

const seenByEveryInstance = (key: TimedKey, now: Date, times: KeyManagementTimes) =>
  now.getTime() - key.storedAt.getTime() >= 2 * times.KeyCacheDuration;

const inSigningPhase = (key: TimedKey, now: Date, times: KeyManagementTimes) => {
  const age = now.getTime() - key.createdAt.getTime();
  return age >= times.PropagationTime && age <= times.RotationInterval;
};

const byAge = (a: TimedKey, b: TimedKey) =>
  a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

/**
 * The keys to publish at `now`, the signing key first (oidc-provider signs with the first key of an algorithm), and
 * the next moment at which that answer may change by time alone (a phase boundary), so an instance knows when to look
 * again without a change in the store.
 */
export function signingKeysAt<K extends TimedKey>(
  keys: readonly K[],
  now: Date,
  times: KeyManagementTimes,
): { published: K[]; signing: K | undefined; changesAt: Date | undefined } {
  const statics = keys.filter((k) => k.origin === 'static');
  const managed = keys.filter((k) => k.origin !== 'static' && !isRetired(k.createdAt, now, times));
  const published = [...statics, ...managed].sort(byAge);
  const staticSigner = [...statics].reverse().find((k) => seenByEveryInstance(k, now, times));
  const signing =
    staticSigner ??
    managed.sort(byAge).find((k) => inSigningPhase(k, now, times) && seenByEveryInstance(k, now, times)) ??
    published[0];
  const boundaries = keys.flatMap((k) => {
    const created = k.createdAt.getTime();
    const seen = k.storedAt.getTime() + 2 * times.KeyCacheDuration;
    return k.origin === 'static'
      ? [seen]
      : [
          seen,
          created + times.PropagationTime,
          created + times.RotationInterval + 1,
          created + times.RotationInterval + times.RetentionDuration + 1,
        ];
  });
  const next = boundaries.filter((t) => t > now.getTime()).sort((a, b) => a - b)[0];
  return {
    published: signing ? [signing, ...published.filter((k) => k !== signing)] : published,
    signing,
    changesAt: next === undefined ? undefined : new Date(next),
  };
}

/**
 * Whether a new key is due (Duende's rule): the youngest managed key has no more than PropagationTime of its
 * signing phase left, so a successor must be announced now to be known everywhere when it takes over.
 */
export function isNewKeyDue(keys: readonly TimedKey[], now: Date, times: KeyManagementTimes): boolean {
  const managed = keys.filter((k) => k.origin !== 'static' && !isRetired(k.createdAt, now, times));
  if (managed.length === 0) return true;
  const youngest = Math.max(...managed.map((k) => k.createdAt.getTime()));
  return youngest + times.RotationInterval - now.getTime() <= times.PropagationTime;
}
