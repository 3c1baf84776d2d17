import { hash } from 'node:crypto';

const NAMESPACE = Buffer.from('5b2f0e1c9a4d4b7e8f3a6c1d2e4f6a8b', 'hex');

/** RFC 4122 version-5 UUID: the same name always gives the same id, so re-runs never duplicate records. */
export function uuidV5(name: string): string {
  // One-shot hashing: a migration computes one of these per MFA credential and client secret.
  const digest = hash('sha1', Buffer.concat([NAMESPACE, Buffer.from(name)]), 'buffer');
  digest[6] = (digest[6] & 0x0f) | 0x50;
  digest[8] = (digest[8] & 0x3f) | 0x80;
  const hex = digest.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
