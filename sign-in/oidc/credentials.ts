import type { AppConfig } from '../../platform/config/config-schema';
import { unprotectSecret, type KeyRing } from '../../platform/security/data-protection';
import { equalDuration } from '../../platform/security/equal-duration';
import { hashPassword, verifyPassword } from '../../platform/security/password-hashing';
import { cheaperThanNative, verifyAnyPassword } from '../../platform/security/password-formats';
import { matchTotp, recoveryCodeHash } from '../totp';
import type { Db } from '../../platform/store/database';
import type { SourceReadThrough } from '../source-read-through';
import { consumeRecoveryCode, findTotpCredential, useTotpStep } from '../store/mfa';
import {
  countSignInAttempt,
  findLockoutEnd,
  findSignInUser,
  releaseSignInAttempt,
  reserveSignInAttempt,
  settleSignInSuccess,
  upgradePasswordHash,
} from '../store/sign-in-users';

/**
 * A password check answers `invalid` for an unknown e-mail, a deactivated user, a user without a password, a locked
 * account and a wrong password alike: none of them may tell an attacker that an account exists.
 */
export type PasswordCheck =
  | {
      status: 'valid';
      userId: string;
      needsSecondFactor: boolean;
      emailConfirmed: boolean;
      /** The user's security stamp as read before the password was checked (see SignedInAsOf). */
      stamp: string | null;
    }
  | {
      status: 'invalid';
      /** For the audit trail only: the page shows one answer for all of them. */
      reason: 'unknown-account' | 'no-password' | 'deactivated' | 'locked' | 'wrong-password';
      userId?: string;
      /** This attempt was the last one allowed: the account is locked now. */
      lockedNow?: boolean;
    };

export type SecondFactorCheck =
  | { status: 'valid'; method: 'mfa' | 'recovery-code' }
  | { status: 'invalid'; lockedNow?: boolean }
  | { status: 'locked'; message: string; lockedNow: boolean };

/**
 * Whether a client address has used up its sign-in budget (Auth:SignInRateLimit, across every account and API
 * process): the sign-in pages and the password grant count each password or code submission here.
 */
export async function overSignInBudget(db: Db, config: AppConfig, address: string | undefined): Promise<boolean> {
  const { PermitLimit, WindowSeconds } = config.Auth.SignInRateLimit;
  return (await countSignInAttempt(db, address ?? 'unknown', WindowSeconds)) > PermitLimit;
}

/** A native hash of nothing anyone knows: an unknown e-mail costs one verification, like a known one. */
let dummyHash: Promise<string> | undefined;
const dummy = () => (dummyHash ??= hashPassword(`no user ${Math.random()}`));

/**
 * Every failed password check takes as long as the slowest recent check, whatever the account and its hash format: a
 * migrated ASP.NET V2 hash verifies in a few milliseconds, BCrypt in tens, the native hash in between, and without
 * this a single request would tell migrated users apart. A right password is answered as soon as it is checked (the
 * next page says it was right, so its time tells nothing more), and still sets the floor. The ceiling keeps a
 * pathological hash from slowing every sign-in.
 */
const atPasswordFloor = equalDuration({ halfLifeMs: 60_000, ceilingMs: 2_000 });
const rightPassword = (check: PasswordCheck) => check.status === 'valid';

function lockedMessage(until: Date): string {
  const minutes = Math.max(1, Math.ceil((until.getTime() - Date.now()) / 60_000));
  return `Too many failed attempts: this account is locked. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`;
}

/**
 * The password step. Every migrated format verifies; after a success with one, the stored hash becomes the native
 * one. The attempt is counted before the hash is checked (reserveSignInAttempt), so parallel guesses cannot outrun
 * the lockout, and a locked account's password is not checked at all.
 */
export function checkPassword(
  db: Db,
  config: AppConfig,
  email: string,
  password: string,
  readThrough?: SourceReadThrough,
): Promise<PasswordCheck> {
  return atPasswordFloor(async (aside) => {
    const { MaxFailedAttempts, Minutes } = config.Auth.Lockout;
    let user = await findSignInUser(db, email);
    // During the cutover's read-through window a user the last sweep missed is migrated now, then checked as any
    // other: its hash, lockout and two-step verification as the source had them. The floor above keeps the time the same;
    // the look-up stays aside of it (it evens out its own cases), so a slow source does not slow every sign-in.
    if (!user && readThrough && (await aside(() => readThrough.user(email))) === 'migrated')
      user = await findSignInUser(db, email);
    const reservation =
      user?.active && user.password_hash
        ? await reserveSignInAttempt(db, user.id, MaxFailedAttempts, Minutes)
        : undefined;
    if (!user?.password_hash || !reservation) {
      await verifyPassword(password, await dummy());
      const reason = !user
        ? 'unknown-account'
        : !user.active
          ? 'deactivated'
          : !user.password_hash
            ? 'no-password'
            : 'locked';
      return { status: 'invalid', reason, userId: user?.id };
    }
    const [{ valid, needsUpgrade }] = await Promise.all([
      verifyAnyPassword(password, user.password_hash),
      cheaperThanNative(user.password_hash) ? verifyPassword(password, await dummy()) : undefined,
    ]);
    if (!valid) return { status: 'invalid', reason: 'wrong-password', userId: user.id, lockedNow: reservation.locked };
    if (needsUpgrade) await upgradePasswordHash(db, user.id, user.password_hash, await hashPassword(password));
    // ASP.NET Identity keeps an authenticator key from before enrolment was finished: the switch decides, with a key.
    const needsSecondFactor = user.two_factor_enabled && (await findTotpCredential(db, user.id)) !== undefined;
    if (needsSecondFactor) await releaseSignInAttempt(db, user.id, reservation, MaxFailedAttempts);
    else await settleSignInSuccess(db, user.id, reservation);
    return {
      status: 'valid',
      userId: user.id,
      needsSecondFactor,
      emailConfirmed: user.email_confirmed,
      stamp: user.security_stamp,
    };
  }, rightPassword);
}

/**
 * The second step: a TOTP code (each accepted once) or a recovery code (consumed). The attempt is counted first, as a
 * password is, so wrong codes count toward the lockout and a locked account's codes are not checked at all.
 */
export async function checkSecondFactor(
  db: Db,
  config: AppConfig,
  ring: KeyRing,
  userId: string,
  code: string,
): Promise<SecondFactorCheck> {
  const { MaxFailedAttempts, Minutes } = config.Auth.Lockout;
  const reservation = await reserveSignInAttempt(db, userId, MaxFailedAttempts, Minutes);
  if (!reservation) return { status: 'locked', message: await lockedMessageOf(db, userId), lockedNow: false };
  const method = await secondFactorMatches(db, ring, userId, code);
  if (method) {
    await settleSignInSuccess(db, userId, reservation);
    return { status: 'valid', method };
  }
  return reservation.locked
    ? { status: 'locked', message: lockedMessage(new Date(Date.now() + Minutes * 60_000)), lockedNow: true }
    : { status: 'invalid' };
}

async function lockedMessageOf(db: Db, userId: string): Promise<string> {
  return lockedMessage((await findLockoutEnd(db, userId)) ?? new Date());
}

async function secondFactorMatches(
  db: Db,
  ring: KeyRing,
  userId: string,
  code: string,
): Promise<'mfa' | 'recovery-code' | undefined> {
  const totp = await findTotpCredential(db, userId);
  if (totp) {
    const step = await matchTotp(
      unprotectSecret(totp.secret, ring),
      code,
      totp.last_used_step === null ? null : Number(totp.last_used_step),
    );
    if (step !== undefined && (await useTotpStep(db, totp.id, step))) return 'mfa';
  }
  if (code.length >= 6 && !/^\d{6}$/.test(code)) {
    // As typed, and in capitals: the service's codes are ASP.NET Core Identity's XXXXX-XXXXX, and a phone may type
    // them in lower case; codes migrated from older releases (lower-case hex) match as typed.
    const variants = [...new Set([code, code.toUpperCase()])];
    const hashes = [...ring.keys.values()].flatMap((key) => variants.map((v) => recoveryCodeHash(v, key)));
    if (await consumeRecoveryCode(db, userId, hashes)) return 'recovery-code';
  }
  return undefined;
}
