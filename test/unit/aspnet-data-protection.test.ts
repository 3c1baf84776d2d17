import { randomBytes } from 'node:crypto';
import {
  additionalData,
  DataProtectionError,
  decryptCbcHmac,
  deriveKeySp800108,
  encryptCbcHmac,
  guidBytes,
  guidOf,
  keyXml,
  parseKeyRing,
  protect,
  unprotect,
} from '../../platform/security/aspnet-data-protection';

// Known answers published with ASP.NET Core's own tests (github.com/dotnet/aspnetcore,
// src/DataProtection/DataProtection/test/Microsoft.AspNetCore.DataProtection.Tests): the reader must give the bytes
// .NET gives, not merely open what it wrote itself.
const utf8 = (s: string) => Buffer.from(s, 'utf8');

describe('SP800-108 CTR HMAC-SHA512 (SP800_108Tests)', () => {
  test.each([
    [512 / 8 - 1, 'V47WmHzPSkdC2vkLAomIjCzZlDOAetll3yJLcSvon7LJFjJpEN+KnSNp+gIpeydKMsENkflbrIZ/3s6GkEaH'],
    [512 / 8, 'mVaFM4deXLl610CmnCteNzxgbM/VkmKznAlPauHcDBn0le06uOjAKLHx0LfoU2/Ttq9nd78Y6Nk6wArmdwJgJg=='],
    [512 / 8 + 1, 'GaHPeqdUxriFpjRtkYQYWr5/iqneD/+hPhVJQt4rXblxSpB1UUqGqL00DMU/FJkX0iMCfqUjQXtXyfks+p++Ev4='],
  ])('DeriveKeyWithContextHeader_Normal, %i bytes', (length, expected) => {
    const derived = deriveKeySp800108(utf8('kdk'), utf8('label'), utf8('contextHeader'), utf8('context'), length);
    expect(derived.toString('base64')).toBe(expected);
  });

  test.each([
    [512 / 8 - 1, 'rt2hM6kkQ8hAXmkHx0TU4o3Q+S7fie6b3S1LAq107k++P9v8uSYA2G+WX3pJf9ZkpYrTKD7WUIoLkgA1R9lk'],
    [512 / 8 + 1, 'KedXO0zAIZ3AfnPqY1NnXxpC3HDHIxefG4bwD3g6nWYEc5+q7pjbam71Yqj0zgHMNC9Z7BX3wS1/tajFocRWZUk='],
  ])('DeriveKeyWithContextHeader_LongKey (a 50,000-byte KDK), %i bytes', (length, expected) => {
    const kdk = Buffer.from(Array.from({ length: 50_000 }, (_, i) => i & 0xff));
    const derived = deriveKeySp800108(kdk, utf8('label'), utf8('contextHeader'), utf8('context'), length);
    expect(derived.toString('base64')).toBe(expected);
  });

  test('DeriveKeys_EmptyKdk (what the context header is made with), 64 and 96 bytes', () => {
    const empty = Buffer.alloc(0);
    expect(deriveKeySp800108(empty, empty, empty, empty, 64).toString('base64')).toBe(
      'fHGMWaDLmoncLsEKuKbZo8T+73paNohDeb5O7BSxbC8Gus8d/mUpa/9w2ss65OHlmFw1VZhIXzr5swMYVRndRw==',
    );
    expect(deriveKeySp800108(empty, empty, empty, empty, 96).toString('base64')).toBe(
      'iXd0KuWopclbxtWf9dO8fnerBqLJvndOUs74pTcj7Ck8Ctsvz4QttXkCY1DPd4aDbOE/CCU8/bIQtzoU1Xu3ZQ1pV0qEZmzFll+Vpf+q7av7AGEqwh56a+NPt6gxC5CP',
    );
  });
});

test('AES-256-CBC + HMAC-SHA256 (ManagedAuthenticatedEncryptorTests.Encrypt_KnownKey)', () => {
  // SequentialGenRandom hands out 00 01 02 …: the key modifier is 00…0F and the IV 10…1F.
  let next = 0;
  const sequential = (size: number) => Buffer.from(Array.from({ length: size }, () => next++ & 0xff));
  const alg = { keyBytes: 32, hmac: 'sha256' } as const;
  const out = encryptCbcHmac(utf8('master key'), alg, Buffer.from([2, 3, 4]), Buffer.from([6, 5, 4, 3]), sequential);
  expect(out.toString('base64')).toBe(
    'AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh+36j4yWJOjBgOJxmYDYwhLnYqFxw+9mNh/cudyPrWmJmw4d/dmGaLJLLut2udiAAA=',
  );
  expect(decryptCbcHmac(utf8('master key'), alg, out, Buffer.from([6, 5, 4, 3]))).toEqual(Buffer.from([2, 3, 4]));
  const tampered = Buffer.from(out);
  tampered[40] ^= 1;
  expect(() => decryptCbcHmac(utf8('master key'), alg, tampered, Buffer.from([6, 5, 4, 3]))).toThrow(
    DataProtectionError,
  );
});

test('the additional authenticated data of a purpose chain (AdditionalAuthenticatedDataTemplateTests)', () => {
  const purposes = [
    'my sample string',
    '©®±µ¶',
    'my other sample string',
    'CfDJ8H5oH_fp1QNBmvs-OWXxsVoV30hrXeI4-PI4p1VZytjsgd0DTstMdtTZbFtm2dKHvsBlDCv7TiEWKztZf8fb48pUgBgUE2SeYV3eOUXvSfNWU0D8SmHLy5KEnwKKkZKqudDhCnjQSIU7mhDliJJN1e4',
    '.',
  ];
  // The template before a key is chosen holds an all-zero key id.
  expect(additionalData('00000000-0000-0000-0000-000000000000', purposes).toString('base64')).toBe(
    'CfDJ8AAAAAAAAAAAAAAAAAAAAAAAAAAFEG15IHNhbXBsZSBzdHJpbmcKwqnCrsKxwrXCthZteSBvdGhlciBzYW1wbGUgc3RyaW5nmwFDZkRKOEg1b0hfZnAxUU5CbXZzLU9XWHhzVm9WMzBoclhlSTQtUEk0cDFWWnl0anNnZDBEVHN0TWR0VFpiRnRtMmRLSHZzQmxEQ3Y3VGlFV0t6dFpmOGZiNDhwVWdCZ1VFMlNlWVYzZU9VWHZTZk5XVTBEOFNtSEx5NUtFbndLS2taS3F1ZERoQ25qUVNJVTdtaERsaUpKTjFlNAEu',
  );
});

test('a key id is written as .NET writes a Guid (first three groups little-endian)', () => {
  const id = '80732141-ec8f-4b80-af9c-c4d2d1ff8901';
  expect(guidBytes(id).toString('hex')).toBe('412173808fec804baf9cc4d2d1ff8901');
  expect(guidOf(guidBytes(id))).toBe(id);
});

describe('a key ring and a payload protected for a chain of purposes', () => {
  const key = { id: 'f9f2c2a4-7a63-4b40-9f1f-2f0a9d1e6c11', masterKey: randomBytes(64) };
  const xml = keyXml({ ...key, created: new Date('2026-01-01Z'), expires: new Date('2026-04-01Z') });
  const purposes = ['/srv/identity', 'PersistentGrantSerializer'];

  test('opens with the same application name and purposes, and names what is wrong otherwise', () => {
    const ring = parseKeyRing([xml]);
    const payload = protect(key, purposes, utf8('{"Version":5}'));
    expect(payload.subarray(0, 4).toString('hex')).toBe('09f0c9f0');
    expect(payload.toString('base64url').startsWith('CfDJ8')).toBe(true);
    expect(unprotect(ring, purposes, payload).toString()).toBe('{"Version":5}');

    const failure = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        return (error as DataProtectionError).reason;
      }
      return 'opened';
    };
    expect(failure(() => unprotect(ring, ['/srv/other', 'PersistentGrantSerializer'], payload))).toBe('wrong-purpose');
    expect(failure(() => unprotect(parseKeyRing([]), purposes, payload))).toBe('unknown-key');
    expect(failure(() => unprotect(ring, purposes, utf8('{"not":"protected"}')))).toBe('not-protected');
    const revocation = `<revocation version="1"><revocationDate>2026-02-01T00:00:00Z</revocationDate><key id="${key.id}" /><reason>rotated</reason></revocation>`;
    expect(failure(() => unprotect(parseKeyRing([xml, revocation]), purposes, payload))).toBe('key-revoked');
    const revokeAll = `<revocation version="1"><revocationDate>2026-02-01T00:00:00Z</revocationDate><key id="*" /><reason>all</reason></revocation>`;
    expect(failure(() => unprotect(parseKeyRing([xml, revokeAll]), purposes, payload))).toBe('key-revoked');
  });

  test('a master key encrypted at the source, or a GCM key, is named rather than opened', () => {
    const encrypted = xml.replace(
      /<value>[^<]+<\/value>/,
      '<encryptedSecret decryptorType="Microsoft.AspNetCore.DataProtection.XmlEncryption.DpapiXmlDecryptor, Microsoft.AspNetCore.DataProtection" xmlns="http://schemas.asp.net/2015/03/dataProtection"><encryptedKey><value>AQAAANCMnd8B</value></encryptedKey></encryptedSecret>',
    );
    const payload = protect(key, purposes, utf8('x'));
    expect(() => unprotect(parseKeyRing([encrypted]), purposes, payload)).toThrow(/DpapiXmlDecryptor/);
    const gcm = keyXml({ ...key, created: new Date(), expires: new Date(), encryption: 'AES_256_GCM' });
    expect(parseKeyRing([gcm]).keys.get(key.id)?.problem?.reason).toBe('unsupported-algorithm');
  });

  test('each CBC algorithm of the descriptor opens what it protected', () => {
    for (const [encryption, validation, keyBytes, hmac] of [
      ['AES_128_CBC', 'HMACSHA256', 16, 'sha256'],
      ['AES_192_CBC', 'HMACSHA512', 24, 'sha512'],
      ['AES_256_CBC', 'HMACSHA512', 32, 'sha512'],
    ] as const) {
      const ring = parseKeyRing([keyXml({ ...key, created: new Date(), expires: new Date(), encryption, validation })]);
      const payload = protect({ ...key, algorithm: { keyBytes, hmac } }, purposes, utf8(encryption));
      expect(unprotect(ring, purposes, payload).toString()).toBe(encryption);
    }
  });
});
