import { createHmac } from 'node:crypto';
import { base32Decode } from '../../platform/security/base32';

/** The time step of now (RFC 6238, 30 s). */
export const currentStep = () => Math.floor(Date.now() / 30_000);

/**
 * The 6-digit code an authenticator app shows for a base32 key: RFC 6238 written out here, independent of the
 * service's TOTP code.
 */
export function totp(base32: string, step = currentStep()): string {
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(step));
  const mac = createHmac('sha1', base32Decode(base32)).update(counter).digest();
  const offset = mac[mac.length - 1] & 0xf;
  return String((mac.readUInt32BE(offset) & 0x7fffffff) % 1_000_000).padStart(6, '0');
}

/** The authenticator key of the generated source's two-step users, and the one tests enrol users with. */
export const AUTHENTICATOR_KEY = 'JBSWY3DPEHPK3PXP';

/** The code an app holding AUTHENTICATOR_KEY shows at this step. */
export const fixtureTotp = (step?: number) => totp(AUTHENTICATOR_KEY, step);
