import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** The protected form of a secret at rest: AES-256-GCM under the data-protection key, `v1:` + base64(iv | tag | ciphertext). */
export function protectSecret(secret: Buffer, key: Buffer): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const encrypted = Buffer.concat([cipher.update(secret), cipher.final()]);
  return `v1:${Buffer.concat([iv, cipher.getAuthTag(), encrypted]).toString('base64')}`;
}

export function unprotectSecret(protectedValue: string, key: Buffer): Buffer {
  if (!protectedValue.startsWith('v1:')) throw new Error('not a protected secret');
  const bytes = Buffer.from(protectedValue.slice(3), 'base64');
  const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, 12));
  decipher.setAuthTag(bytes.subarray(12, 28));
  return Buffer.concat([decipher.update(bytes.subarray(28)), decipher.final()]);
}
