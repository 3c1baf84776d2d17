import { pbkdf2Sync } from 'node:crypto';
import bcrypt from 'bcryptjs';
import { cheaperThanNative, detectPasswordFormat, verifyAnyPassword } from '../../platform/security/password-formats';
import { hashPassword, verifyPassword } from '../../platform/security/password-hashing';

describe('native password hashes (ASP.NET Core Identity V3 layout)', () => {
  test('a hash verifies its password and no other', async () => {
    const hash = await hashPassword('correct horse battery staple');
    const bytes = Buffer.from(hash, 'base64');
    expect(bytes[0]).toBe(0x01);
    expect(bytes.readUInt32BE(1)).toBe(2);
    expect(bytes.readUInt32BE(5)).toBe(100_000);
    expect(await verifyPassword('correct horse battery staple', hash)).toBe(true);
    expect(await verifyPassword('correct horse battery stapler', hash)).toBe(false);
  });

  test('two hashes of one password differ (random salt)', async () => {
    expect(await hashPassword('same')).not.toBe(await hashPassword('same'));
  });

  // Microsoft's published vectors (aspnetcore PasswordHasherTest), all of the password "my password".
  test.each([
    [
      'HMAC-SHA256, 10,000 iterations, 128-bit salt, 256-bit subkey',
      'AQAAAAEAACcQAAAAEAABAgMEBQYHCAkKCwwNDg+yWU7rLgUwPZb1Itsmra7cbxw2EFpwpVFIEtP+JIuUEw==',
    ],
    [
      'HMAC-SHA512, 50 iterations, 128-bit salt, 128-bit subkey',
      'AQAAAAIAAAAyAAAAEOMwvh3+FZxqkdMBz2ekgGhwQ4B6pZWND6zgESBuWiHw',
    ],
  ])('a published V3 hash verifies: %s', async (_label, hash) => {
    expect(await verifyPassword('my password', hash)).toBe(true);
    expect(await verifyPassword('My password', hash)).toBe(false);
  });
});

describe('migrated password hashes verify unchanged and report when to upgrade', () => {
  test.each([
    [
      'ASP.NET Identity V2 (PBKDF2-HMAC-SHA1, 1,000 iterations)',
      'AAABAgMEBQYHCAkKCwwNDg+ukCEMDf0yyQ29NYubggHIVY0sdEUfdyeM+E1LtH1uJg==',
      'aspnet-v2',
      true,
    ],
    [
      'V3 with HMAC-SHA256',
      'AQAAAAEAACcQAAAAEAABAgMEBQYHCAkKCwwNDg+yWU7rLgUwPZb1Itsmra7cbxw2EFpwpVFIEtP+JIuUEw==',
      'aspnet-v3',
      true,
    ],
    [
      'V3 with HMAC-SHA512 but only 50 iterations',
      'AQAAAAIAAAAyAAAAEOMwvh3+FZxqkdMBz2ekgGhwQ4B6pZWND6zgESBuWiHw',
      'aspnet-v3',
      true,
    ],
  ])('%s', async (_label, hash, format, upgrade) => {
    expect(detectPasswordFormat(hash)).toBe(format);
    // Cheaper than the native hash: a sign-in check spends the native work as well (oidc/credentials.ts).
    expect(cheaperThanNative(hash)).toBe(true);
    expect(await verifyAnyPassword('my password', hash)).toEqual({ valid: true, needsUpgrade: upgrade });
    expect((await verifyAnyPassword('not my password', hash)).valid).toBe(false);
  });

  test('V3 with HMAC-SHA1 verifies', async () => {
    const salt = Buffer.alloc(16, 7);
    const subkey = pbkdf2Sync('my password', salt, 10_000, 32, 'sha1');
    const header = Buffer.from([0x01, 0, 0, 0, 0, 0, 0, 0x27, 0x10, 0, 0, 0, 16]);
    const hash = Buffer.concat([header, salt, subkey]).toString('base64');
    expect(await verifyAnyPassword('my password', hash)).toEqual({ valid: true, needsUpgrade: true });
  });

  test('BCrypt verifies', async () => {
    const hash = bcrypt.hashSync('my password', 4);
    expect(detectPasswordFormat(hash)).toBe('bcrypt');
    expect(await verifyAnyPassword('my password', hash)).toEqual({ valid: true, needsUpgrade: true });
  });

  test('a native hash needs no upgrade; an unknown format never verifies', async () => {
    expect(await verifyAnyPassword('pw', await hashPassword('pw'))).toEqual({ valid: true, needsUpgrade: false });
    expect(await verifyAnyPassword('pw', 'plain-text')).toEqual({ valid: false, needsUpgrade: false });
  });
});

test('the native hash and BCrypt are not cheaper than the native hash', async () => {
  expect(cheaperThanNative(await hashPassword('my password'))).toBe(false);
  expect(cheaperThanNative(bcrypt.hashSync('my password', 4))).toBe(false);
});
