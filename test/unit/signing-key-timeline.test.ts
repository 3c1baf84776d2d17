import {
  isNewKeyDue,
  isRetired,
  nextRotationAt,
  signingKeysAt,
  type TimedKey,
} from '../../platform/security/signing-key-timeline';

// Times of seconds, as the rotation test runs them: a key is announced for 6 s, signs until 20 s, is kept until 26 s.
const times = { RotationInterval: 20_000, PropagationTime: 6_000, RetentionDuration: 6_000, KeyCacheDuration: 1_000 };
const T0 = Date.UTC(2026, 0, 1);
const at = (seconds: number) => new Date(T0 + seconds * 1000);
/** A key created at `created` s and stored at `stored` s (the same moment unless a migration brought it later). */
const key = (id: string, created: number, extra: Partial<TimedKey> = {}): TimedKey => ({
  id,
  algorithm: 'RS256',
  createdAt: at(created),
  storedAt: at(created),
  origin: 'generated',
  ...extra,
});
const ids = (keys: TimedKey[]) => keys.map((k) => k.id);

describe("a key's phases (Duende KeyManager.CanBeUsedAsCurrentSigningKey)", () => {
  const first = key('first', 0);
  const second = key('second', 14);

  test('a fresh store: its only key signs at once, ignoring the activation delay', () => {
    const now = signingKeysAt([first], at(0.5), times);
    expect(now.signing?.id).toBe('first');
    expect(ids(now.published)).toEqual(['first']);
  });

  test('announced: a younger key is published but the older one signs until the new one is PropagationTime old', () => {
    const now = signingKeysAt([first, second], at(19), times);
    expect(now.signing?.id).toBe('first');
    expect(ids(now.published)).toEqual(['first', 'second']);
    // The next boundary: the new key turns PropagationTime old (the old one expires a moment later).
    expect(now.changesAt).toEqual(at(20));
  });

  test('signing: the oldest key within its signing phase signs; the expired one is retained, published second', () => {
    const now = signingKeysAt([first, second], at(21), times);
    expect(now.signing?.id).toBe('second');
    expect(ids(now.published)).toEqual(['second', 'first']);
  });

  test('retained until RotationInterval + RetentionDuration, then retired: no longer published', () => {
    expect(ids(signingKeysAt([first, second], at(26), times).published)).toEqual(['second', 'first']);
    expect(ids(signingKeysAt([first, second], at(26.002), times).published)).toEqual(['second']);
    expect(isRetired(first.createdAt, at(26), times)).toBe(false);
    expect(isRetired(first.createdAt, at(26.002), times)).toBe(true);
  });

  test('with every key past its signing phase, the youngest published one signs (rotation is due)', () => {
    const now = signingKeysAt([first], at(22), times);
    expect(now.signing?.id).toBe('first');
    expect(isNewKeyDue([first], at(22), times)).toBe(true);
  });
});

describe('keys new to the store sign only once every instance has seen them', () => {
  test('a migrated key, older and in its signing phase, takes over two key-cache looks after it arrived, same kid', () => {
    const own = key('own', 0);
    const migrated = key('source-kid', -10, { origin: 'migrated', storedAt: at(3) });
    const before = signingKeysAt([own, migrated], at(4.5), times);
    expect(before.signing?.id).toBe('own');
    expect(ids(before.published)).toEqual(['own', 'source-kid']);
    expect(before.changesAt).toEqual(at(5));
    const after = signingKeysAt([own, migrated], at(5), times);
    expect(after.signing?.id).toBe('source-kid');
  });

  test('with no key seen everywhere yet, the first stored signs, not an older key migrated a moment later', () => {
    const own = key('own', 10);
    const migrated = key('migrated', 0, { storedAt: at(10.2), origin: 'migrated' });
    expect(signingKeysAt([own, migrated], at(10.5), times).signing?.id).toBe('own');
    expect(ids(signingKeysAt([own, migrated], at(10.5), times).published)).toEqual(['own', 'migrated']);
    // Two key-cache looks after it arrived, the migrated key (older, in its signing phase) takes over.
    expect(signingKeysAt([own, migrated], at(12.2), times).signing?.id).toBe('migrated');
  });

  test('a static key wins over managed keys of its algorithm once seen; the newest static one signs', () => {
    const own = key('own', 0);
    const older = key('static-1', -100, { origin: 'static', storedAt: at(1) });
    const newer = key('static-2', -50, { origin: 'static', storedAt: at(8) });
    expect(signingKeysAt([own, older, newer], at(9), times).signing?.id).toBe('static-1');
    const later = signingKeysAt([own, older, newer], at(10), times);
    expect(later.signing?.id).toBe('static-2');
    // Static keys never retire.
    expect(ids(signingKeysAt([older], at(10_000), times).published)).toEqual(['static-1']);
    expect(isNewKeyDue([own, older], at(19), times)).toBe(false);
  });
});

describe('each algorithm has its own signing key', () => {
  test('the RS256 signing key comes first, an EC key signs only for its own algorithm', () => {
    const rsa = key('rsa', 0);
    const ec = key('ec', -2, { algorithm: 'ES256' });
    const ecNew = key('ec-new', 3, { algorithm: 'ES256' });
    const now = signingKeysAt([ec, ecNew, rsa], at(8), times);
    expect(now.signing?.id).toBe('rsa');
    expect(ids(now.published)).toEqual(['rsa', 'ec', 'ec-new']);
  });

  test('a young EC key does not put off the next RS256 key', () => {
    expect(isNewKeyDue([key('rsa', 0), key('ec', 13, { algorithm: 'ES256' })], at(14), times)).toBe(true);
  });
});

describe('when a new key is due (Duende KeyManager.IsKeyRotationRequired)', () => {
  test('none stored: due now', () => {
    expect(isNewKeyDue([], at(0), times)).toBe(true);
  });

  test('due once the youngest key has PropagationTime of its signing phase left, not before', () => {
    const keys = [key('first', 0)];
    expect(isNewKeyDue(keys, at(13.9), times)).toBe(false);
    expect(isNewKeyDue(keys, at(14), times)).toBe(true);
    expect(isNewKeyDue([...keys, key('second', 14)], at(14), times)).toBe(false);
  });

  test('the next step: a key due, or a key to delete, whichever comes first', () => {
    expect(nextRotationAt([key('first', 0)], at(1), times)).toEqual(at(14));
    expect(nextRotationAt([key('first', 0), key('second', 14)], at(15), times)).toEqual(at(26.001));
    expect(nextRotationAt([key('s', 0, { origin: 'static' })], at(1), times)).toBeUndefined();
  });
});
