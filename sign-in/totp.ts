import { createHmac, timingSafeEqual } from 'node:crypto';
import { createGuardrails, generate, generateSecret, generateURI } from 'otplib';

const PERIOD = 30;
/** ASP.NET Identity's authenticator keys are 10 bytes in older releases; otplib asks for 16 unless told. */
const guardrails = createGuardrails({ MIN_SECRET_BYTES: 10 });

/** RFC 6238 time step of a moment. */
export const timeStep = (at = Date.now()) => Math.floor(at / 1000 / PERIOD);

/**
 * The time step a 6-digit code belongs to, accepting one step of clock drift either way (as ASP.NET Identity does),
 * or undefined. A step at or before `lastUsedStep` is refused: each code is accepted once.
 */
export async function matchTotp(
  secret: Uint8Array,
  code: string,
  lastUsedStep: number | null,
  now = Date.now(),
): Promise<number | undefined> {
  if (!/^\d{6}$/.test(code)) return undefined;
  const current = timeStep(now);
  for (const step of [current - 1, current, current + 1]) {
    if (lastUsedStep !== null && step <= lastUsedStep) continue;
    const expected = await generate({ secret, epoch: step * PERIOD, guardrails });
    if (timingSafeEqual(Buffer.from(expected), Buffer.from(code))) return step;
  }
  return undefined;
}

/** A new authenticator key: 20 random bytes, in base32 as authenticator apps take it. */
export const newAuthenticatorKey = (): string => generateSecret();

/** The otpauth:// URI of a key, which the enrolment page shows as a QR code. */
export const authenticatorUri = (issuer: string, label: string, base32: string) =>
  generateURI({ issuer, label, secret: base32 });

/** How recovery codes are kept: HMAC-SHA256 under a data-protection key (the migration hashes them the same way). */
export const recoveryCodeHash = (code: string, key: Buffer) =>
  createHmac('sha256', key).update(code.trim()).digest('base64');
