import { hashPassword, verifyPassword } from '../../passwords/native';

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
    ['HMAC-SHA256, 10,000 iterations, 128-bit salt, 256-bit subkey', 'AQAAAAEAACcQAAAAEAABAgMEBQYHCAkKCwwNDg+yWU7rLgUwPZb1Itsmra7cbxw2EFpwpVFIEtP+JIuUEw=='],
    ['HMAC-SHA512, 50 iterations, 128-bit salt, 128-bit subkey', 'AQAAAAIAAAAyAAAAEOMwvh3+FZxqkdMBz2ekgGhwQ4B6pZWND6zgESBuWiHw'],
  ])('a published V3 hash verifies: %s', async (_label, hash) => {
    expect(await verifyPassword('my password', hash)).toBe(true);
    expect(await verifyPassword('My password', hash)).toBe(false);
  });
});
