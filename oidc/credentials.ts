import type { AppConfig } from '../config/schema';
import { unprotectSecret, type KeyRing } from '../security/data-protection';
import { hashPassword, verifyPassword } from '../security/password-hashing';
import { verifyAnyPassword } from '../security/password-formats';
import { matchTotp, recoveryCodeHash } from '../security/totp';
import type { Db } from '../store/database';
import { consumeRecoveryCode, findTotpCredential, useTotpStep } from '../store/mfa';
import { findSignInUser, recordSignInFailure, resetSignInFailures, upgradePasswordHash } from '../store/sign-in';

export type PasswordCheck =
  | { status: 'valid'; userId: string; needsSecondFactor: boolean }
  | { status: 'invalid' }
  | { status: 'locked'; message: string };

export type SecondFactorCheck = { status: 'valid' } | { status: 'invalid' } | { status: 'locked'; message: string };

/** A native hash of nothing anyone knows: an unknown e-mail costs one verification, like a known one. */
let dummyHash: Promise<string> | undefined;
const dummy = () => (dummyHash ??= hashPassword(`no user ${Math.random()}`));

function lockedMessage(until: Date): string {
  const minutes = Math.max(1, Math.ceil((until.getTime() - Date.now()) / 60_000));
  return `Too many failed attempts: this account is locked. Try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`;
}

async function failure(db: Db, config: AppConfig, userId: string): Promise<PasswordCheck> {
  const { MaxFailedAttempts, Minutes } = config.Auth.Lockout;
  const locked = await recordSignInFailure(db, userId, MaxFailedAttempts, Minutes);
  return locked
    ? { status: 'locked', message: lockedMessage(new Date(Date.now() + Minutes * 60_000)) }
    : { status: 'invalid' };
}

/**
 * The password step. An unknown e-mail, a deactivated user and a wrong password are one answer. Every migrated format
 * verifies; after a success with one, the stored hash becomes the native one.
 */
export async function checkPassword(
  db: Db,
  config: AppConfig,
  email: string,
  password: string,
): Promise<PasswordCheck> {
  const user = await findSignInUser(db, email);
  if (!user?.active || !user.password_hash) {
    await verifyPassword(password, await dummy());
    return { status: 'invalid' };
  }
  if (user.lockout_end && user.lockout_end > new Date())
    return { status: 'locked', message: lockedMessage(user.lockout_end) };
  const { valid, needsUpgrade } = await verifyAnyPassword(password, user.password_hash);
  if (!valid) return failure(db, config, user.id);
  if (needsUpgrade) await upgradePasswordHash(db, user.id, user.password_hash, await hashPassword(password));
  // ASP.NET Identity keeps an authenticator key from before enrolment was finished: the switch decides, with a key.
  const needsSecondFactor = user.two_factor_enabled && (await findTotpCredential(db, user.id)) !== undefined;
  if (!needsSecondFactor) await resetSignInFailures(db, user.id);
  return { status: 'valid', userId: user.id, needsSecondFactor };
}

/** The second step: a TOTP code (each accepted once) or a recovery code (consumed). Failures count toward lockout. */
export async function checkSecondFactor(
  db: Db,
  config: AppConfig,
  ring: KeyRing,
  userId: string,
  code: string,
): Promise<SecondFactorCheck> {
  const totp = await findTotpCredential(db, userId);
  if (totp) {
    const step = await matchTotp(
      unprotectSecret(totp.secret, ring),
      code,
      totp.last_used_step === null ? null : Number(totp.last_used_step),
    );
    if (step !== undefined && (await useTotpStep(db, totp.id, step))) {
      await resetSignInFailures(db, userId);
      return { status: 'valid' };
    }
  }
  if (code.length >= 6 && !/^\d{6}$/.test(code)) {
    const hashes = [...ring.keys.values()].map((key) => recoveryCodeHash(code, key));
    if (await consumeRecoveryCode(db, userId, hashes)) {
      await resetSignInFailures(db, userId);
      return { status: 'valid' };
    }
  }
  const outcome = await failure(db, config, userId);
  return outcome.status === 'locked' ? outcome : { status: 'invalid' };
}
