import { pbkdf2, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import bcrypt from 'bcryptjs';
import { verifyPassword as verifyNative } from './password-hashing';

const pbkdf2Async = promisify(pbkdf2);

/** The hash formats a migrated user may carry; `aspnet-v3` with HMAC-SHA512 and ≥100,000 iterations is native. */
export type PasswordFormat = 'aspnet-v2' | 'aspnet-v3' | 'bcrypt';

const BCRYPT = /^\$2[abxy]?\$\d{2}\$[./A-Za-z0-9]{53}$/;

export function detectPasswordFormat(hash: string): PasswordFormat | undefined {
  if (BCRYPT.test(hash)) return 'bcrypt';
  const bytes = Buffer.from(hash, 'base64');
  if (bytes.length === 49 && bytes[0] === 0x00) return 'aspnet-v2';
  if (bytes.length >= 13 && bytes[0] === 0x01) return 'aspnet-v3';
  return undefined;
}

/** ASP.NET Identity V2: 0x00, 16-byte salt, 32-byte PBKDF2-HMAC-SHA1 subkey, 1,000 iterations. */
async function verifyV2(password: string, hash: string): Promise<boolean> {
  const bytes = Buffer.from(hash, 'base64');
  const salt = bytes.subarray(1, 17);
  const expected = bytes.subarray(17, 49);
  return timingSafeEqual(await pbkdf2Async(password, salt, 1000, 32, 'sha1'), expected);
}

export interface Verification {
  valid: boolean;
  /** The caller should store a native hash of the password it just verified. */
  needsUpgrade: boolean;
}

export async function verifyAnyPassword(password: string, hash: string): Promise<Verification> {
  switch (detectPasswordFormat(hash)) {
    case 'bcrypt':
      return { valid: await bcrypt.compare(password, hash), needsUpgrade: true };
    case 'aspnet-v2':
      return { valid: await verifyV2(password, hash), needsUpgrade: true };
    case 'aspnet-v3': {
      const bytes = Buffer.from(hash, 'base64');
      const native = bytes.readUInt32BE(1) === 2 && bytes.readUInt32BE(5) >= 100_000;
      return { valid: await verifyNative(password, hash), needsUpgrade: !native };
    }
    default:
      return { valid: false, needsUpgrade: false };
  }
}

/**
 * Whether verifying this hash costs less than the native hash (ASP.NET V2, and V3 with another PRF or fewer than
 * 100,000 iterations). A sign-in check spends the native cost as well on such a hash, so that every check puts the
 * same work on the machine: under load, a check that did less would still answer sooner, padding or not.
 */
export function cheaperThanNative(hash: string): boolean {
  const format = detectPasswordFormat(hash);
  if (format === 'aspnet-v2') return true;
  if (format !== 'aspnet-v3') return false;
  const bytes = Buffer.from(hash, 'base64');
  return !(bytes.readUInt32BE(1) === 2 && bytes.readUInt32BE(5) >= 100_000);
}
