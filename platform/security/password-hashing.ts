import { pbkdf2, randomBytes, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';

const pbkdf2Async = promisify(pbkdf2);

/**
 * The service's native hash is the ASP.NET Core Identity V3 layout (PBKDF2, HMAC-SHA512, 100,000 iterations,
 * 128-bit salt, 256-bit subkey), so hashes migrated from an IdentityServer source verify with the same code.
 */
const FORMAT_V3 = 0x01;
const PRF_HMACSHA512 = 2;
const ITERATIONS = 100_000;
const SALT_BYTES = 16;
const SUBKEY_BYTES = 32;

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const subkey = await pbkdf2Async(password, salt, ITERATIONS, SUBKEY_BYTES, 'sha512');
  const header = Buffer.alloc(13);
  header.writeUInt8(FORMAT_V3, 0);
  header.writeUInt32BE(PRF_HMACSHA512, 1);
  header.writeUInt32BE(ITERATIONS, 5);
  header.writeUInt32BE(SALT_BYTES, 9);
  return Buffer.concat([header, salt, subkey]).toString('base64');
}

const PRF_DIGESTS: Record<number, string> = { 0: 'sha1', 1: 'sha256', 2: 'sha512' };

export async function verifyPassword(password: string, hash: string): Promise<boolean> {
  const bytes = Buffer.from(hash, 'base64');
  if (bytes.length < 13 || bytes[0] !== FORMAT_V3) return false;
  const digest = PRF_DIGESTS[bytes.readUInt32BE(1)];
  const iterations = bytes.readUInt32BE(5);
  const saltLength = bytes.readUInt32BE(9);
  if (!digest || saltLength < 16 || bytes.length < 13 + saltLength + 16) return false;
  const salt = bytes.subarray(13, 13 + saltLength);
  const expected = bytes.subarray(13 + saltLength);
  const actual = await pbkdf2Async(password, salt, iterations, expected.length, digest);
  return timingSafeEqual(actual, expected);
}
