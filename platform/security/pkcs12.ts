import {
  createDecipheriv,
  createHash,
  createHmac,
  createPrivateKey,
  pbkdf2Sync,
  timingSafeEqual,
  X509Certificate,
  type KeyObject,
} from 'node:crypto';

/**
 * A reader of PKCS#12 (PFX) files with `node:crypto` alone (RFC 7292), for the certificates IdentityServer signs with:
 * Duende's X509KeyContainer keeps `X509Certificate2.Export(X509ContentType.Pfx)` with no password, and operators
 * export `AddSigningCredential` certificates as .pfx files.
 *
 * What it covers: the shapes .NET and OpenSSL write (DER; the key in a keyBag or a pkcs8ShroudedKeyBag; certificates
 * in certBags, in the clear or encrypted), with PBES2 (PBKDF2 with HMAC-SHA1/256/384/512, AES-CBC or 3DES) or the
 * PKCS#12 PBE with SHA-1 and 3DES (.NET's default on Linux and Windows), and the HMAC integrity check. RC2 (the
 * "legacy" certificate encryption) is named as unsupported; a certificate it hides is not needed to find the key.
 */

export type PfxFailure = 'unreadable' | 'wrong-password' | 'unsupported-encryption' | 'no-private-key';

export class PfxError extends Error {
  constructor(
    readonly reason: PfxFailure,
    message: string,
  ) {
    super(message);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// DER, as far as PKCS#12 needs it

interface Der {
  tag: number;
  /** The content octets. */
  body: Buffer;
  /** The whole element, header included. */
  raw: Buffer;
}

function readDer(buffer: Buffer, offset = 0): Der & { end: number } {
  if (offset + 2 > buffer.length) throw new PfxError('unreadable', 'the file ends inside an ASN.1 element');
  const tag = buffer[offset];
  let length = buffer[offset + 1];
  let start = offset + 2;
  if (length === 0x80) throw new PfxError('unreadable', 'indefinite-length (BER) encoding is not supported');
  if (length > 0x80) {
    const bytes = length & 0x7f;
    if (bytes > 4 || start + bytes > buffer.length) throw new PfxError('unreadable', 'an ASN.1 length is too long');
    length = buffer.subarray(start, start + bytes).readUIntBE(0, bytes);
    start += bytes;
  }
  if (start + length > buffer.length) throw new PfxError('unreadable', 'an ASN.1 element runs past the end');
  return {
    tag,
    body: buffer.subarray(start, start + length),
    raw: buffer.subarray(offset, start + length),
    end: start + length,
  };
}

/** The elements of a constructed element, in order. */
function children(der: Der): Der[] {
  const out: Der[] = [];
  for (let offset = 0; offset < der.body.length;) {
    const child = readDer(der.body, offset);
    out.push(child);
    offset = child.end;
  }
  return out;
}

function expectTag(der: Der | undefined, tag: number, what: string): Der {
  if (der?.tag !== tag) throw new PfxError('unreadable', `${what} is not where PKCS#12 puts it`);
  return der;
}

const SEQUENCE = 0x30;
const OCTET_STRING = 0x04;
const INTEGER = 0x02;
const OID = 0x06;
const EXPLICIT_0 = 0xa0;

function oidOf(der: Der): string {
  const bytes = expectTag(der, OID, 'an object identifier').body;
  const parts = [Math.floor(bytes[0] / 40), bytes[0] % 40];
  for (let i = 1, value = 0; i < bytes.length; i++) {
    value = value * 128 + (bytes[i] & 0x7f);
    if (!(bytes[i] & 0x80)) {
      parts.push(value);
      value = 0;
    }
  }
  return parts.join('.');
}

const integerOf = (der: Der) => Number(BigInt(`0x${expectTag(der, INTEGER, 'an integer').body.toString('hex')}`));

/** The [0] EXPLICIT content of a ContentInfo or a SafeBag. */
const explicitContent = (der: Der | undefined, what: string) => children(expectTag(der, EXPLICIT_0, what))[0];

// ---------------------------------------------------------------------------------------------------------------
// Password-based decryption

const OIDS = {
  data: '1.2.840.113549.1.7.1',
  encryptedData: '1.2.840.113549.1.7.6',
  keyBag: '1.2.840.113549.1.12.10.1.1',
  shroudedKeyBag: '1.2.840.113549.1.12.10.1.2',
  certBag: '1.2.840.113549.1.12.10.1.3',
  x509Certificate: '1.2.840.113549.1.9.22.1',
  pbes2: '1.2.840.113549.1.5.13',
  pbkdf2: '1.2.840.113549.1.5.12',
};
/** The PKCS#12 PBE algorithms with SHA-1 (RFC 7292 appendix C) node can run, by the cipher each uses. */
const PKCS12_PBE: Record<string, { cipher: string; keyBytes: number }> = {
  '1.2.840.113549.1.12.1.3': { cipher: 'des-ede3-cbc', keyBytes: 24 },
  '1.2.840.113549.1.12.1.4': { cipher: 'des-ede-cbc', keyBytes: 16 },
};
const HASHES: Record<string, string> = {
  '1.3.14.3.2.26': 'sha1',
  '2.16.840.1.101.3.4.2.1': 'sha256',
  '2.16.840.1.101.3.4.2.2': 'sha384',
  '2.16.840.1.101.3.4.2.3': 'sha512',
};
const HMACS: Record<string, string> = {
  '1.2.840.113549.2.7': 'sha1',
  '1.2.840.113549.2.9': 'sha256',
  '1.2.840.113549.2.10': 'sha384',
  '1.2.840.113549.2.11': 'sha512',
};
const CBC_CIPHERS: Record<string, { cipher: string; keyBytes: number }> = {
  '2.16.840.1.101.3.4.1.2': { cipher: 'aes-128-cbc', keyBytes: 16 },
  '2.16.840.1.101.3.4.1.22': { cipher: 'aes-192-cbc', keyBytes: 24 },
  '2.16.840.1.101.3.4.1.42': { cipher: 'aes-256-cbc', keyBytes: 32 },
  '1.2.840.113549.3.7': { cipher: 'des-ede3-cbc', keyBytes: 24 },
};

/**
 * A password as the PKCS#12 KDF takes it: a BMPString (UTF-16BE) with a two-byte terminator. No password at all is
 * no bytes; .NET and OpenSSL differ on whether "no password" is that or the empty string, so both are tried.
 */
const bmpPassword = (password: string | null) =>
  password === null ? Buffer.alloc(0) : Buffer.concat([Buffer.from(password, 'utf16le').swap16(), Buffer.alloc(2)]);

/** RFC 7292 appendix B.2: `id` 1 for a key, 2 for an IV, 3 for a MAC key. */
export function pkcs12Kdf(hash: string, password: Buffer, salt: Buffer, id: number, iterations: number, n: number) {
  const u = createHash(hash).digest().length;
  const v = hash === 'sha384' || hash === 'sha512' ? 128 : 64;
  const fill = (b: Buffer) => (b.length === 0 ? b : Buffer.alloc(v * Math.ceil(b.length / v), b));
  const input = Buffer.concat([fill(salt), fill(password)]);
  const out: Buffer[] = [];
  for (let produced = 0; produced < n; produced += u) {
    let a = Buffer.concat([Buffer.alloc(v, id), input]);
    for (let r = 0; r < iterations; r++) a = createHash(hash).update(a).digest();
    out.push(a);
    const b = BigInt(`0x${Buffer.alloc(v, a).toString('hex')}`);
    for (let j = 0; j < input.length; j += v) {
      const block = (BigInt(`0x${input.subarray(j, j + v).toString('hex')}`) + b + 1n) % (1n << BigInt(v * 8));
      Buffer.from(block.toString(16).padStart(v * 2, '0'), 'hex').copy(input, j);
    }
  }
  return Buffer.concat(out).subarray(0, n);
}

function decipher(cipher: string, key: Buffer, iv: Buffer, data: Buffer): Buffer {
  const d = createDecipheriv(cipher, key, iv);
  return Buffer.concat([d.update(data), d.final()]);
}

/** PBES2 (RFC 8018): PBKDF2 over the password's UTF-8 bytes, then a CBC cipher. */
function pbes2Decrypt(params: Der, password: string | null, data: Buffer): Buffer {
  const [kdf, scheme] = children(params);
  const [kdfOid, kdfParams] = children(kdf);
  if (oidOf(kdfOid) !== OIDS.pbkdf2) throw new PfxError('unsupported-encryption', 'a PBES2 KDF other than PBKDF2');
  const [salt, iterations, ...rest] = children(kdfParams);
  const prf = rest.find((d) => d.tag === SEQUENCE);
  const hmac = prf ? HMACS[oidOf(children(prf)[0])] : 'sha1';
  const [cipherOid, iv] = children(scheme);
  const cipher = CBC_CIPHERS[oidOf(cipherOid)];
  if (!hmac || !cipher) throw new PfxError('unsupported-encryption', 'a PBES2 PRF or cipher this reader lacks');
  const key = pbkdf2Sync(Buffer.from(password ?? '', 'utf8'), salt.body, integerOf(iterations), cipher.keyBytes, hmac);
  return decipher(cipher.cipher, key, iv.body, data);
}

/** Decrypts with the algorithm an AlgorithmIdentifier names; a wrong password fails (padding), naming it. */
function pbeDecrypt(algorithm: Der, password: string | null, data: Buffer): Buffer {
  const [oid, params] = children(algorithm);
  const name = oidOf(oid);
  try {
    if (name === OIDS.pbes2) return pbes2Decrypt(params, password, data);
    const pbe = PKCS12_PBE[name];
    if (!pbe) throw new PfxError('unsupported-encryption', `the encryption ${name} is not supported (RC2?)`);
    const [salt, iterations] = children(params);
    const bmp = bmpPassword(password);
    const count = integerOf(iterations);
    const key = pkcs12Kdf('sha1', bmp, salt.body, 1, count, pbe.keyBytes);
    const iv = pkcs12Kdf('sha1', bmp, salt.body, 2, count, 8);
    return decipher(pbe.cipher, key, iv, data);
  } catch (error) {
    if (error instanceof PfxError) throw error;
    throw new PfxError('wrong-password', 'the contents do not decrypt with this password');
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The PFX: integrity check, safe contents, bags

/** MacData: HMAC over the authenticated safe with a key from the PKCS#12 KDF (id 3). */
function macMatches(macData: Der, content: Buffer, password: string | null): boolean {
  const [digestInfo, salt, iterations] = children(macData);
  const [algorithm, digest] = children(digestInfo);
  const hash = HASHES[oidOf(children(algorithm)[0])];
  if (!hash) throw new PfxError('unsupported-encryption', 'the integrity check uses a hash this reader lacks');
  const count = iterations ? integerOf(iterations) : 1;
  const size = createHash(hash).digest().length;
  const key = pkcs12Kdf(hash, bmpPassword(password), salt.body, 3, count, size);
  const mac = createHmac(hash, key).update(content).digest();
  return mac.length === digest.body.length && timingSafeEqual(mac, digest.body);
}

interface Bags {
  keys: KeyObject[];
  certificates: Buffer[];
  /** Encrypted contents this reader could not open (RC2): they may hold what is missing. */
  unopened: number;
}

function readBag(bag: Der, password: string | null, into: Bags): void {
  const [id, value] = children(bag);
  const content = explicitContent(value, 'a bag value');
  switch (oidOf(id)) {
    case OIDS.keyBag:
      into.keys.push(privateKeyOf(content.raw));
      return;
    case OIDS.shroudedKeyBag: {
      const [algorithm, encrypted] = children(content);
      into.keys.push(privateKeyOf(pbeDecrypt(algorithm, password, encrypted.body)));
      return;
    }
    case OIDS.certBag: {
      const [type, certValue] = children(content);
      if (oidOf(type) === OIDS.x509Certificate)
        into.certificates.push(explicitContent(certValue, 'a certificate').body);
    }
  }
}
const PKCS8 = { format: 'der', type: 'pkcs8' } as const;

function privateKeyOf(pkcs8: Buffer): KeyObject {
  try {
    return createPrivateKey({ key: pkcs8, ...PKCS8 });
  } catch {
    throw new PfxError('unreadable', 'a key bag does not hold a PKCS#8 private key');
  }
}

function readContentInfo(info: Der, password: string | null, into: Bags): void {
  const [type, value] = children(info);
  const kind = oidOf(type);
  let safeContents: Buffer;
  if (kind === OIDS.data) safeContents = expectTag(explicitContent(value, 'data'), OCTET_STRING, 'data').body;
  else if (kind === OIDS.encryptedData) {
    const [, encryptedContentInfo] = children(explicitContent(value, 'encrypted data'));
    const [, algorithm, encrypted] = children(encryptedContentInfo);
    try {
      safeContents = pbeDecrypt(algorithm, password, encrypted.body);
    } catch (error) {
      if (!(error instanceof PfxError) || error.reason !== 'unsupported-encryption') throw error;
      into.unopened++;
      return;
    }
  } else return;
  for (const bag of children(readDer(safeContents))) readBag(bag, password, into);
}

/** The bags of the authenticated safe, opened with the first of the passwords that decrypts them. */
function readBags(content: Buffer, passwords: Array<string | null>): Bags {
  for (const [i, password] of passwords.entries()) {
    try {
      const bags: Bags = { keys: [], certificates: [], unopened: 0 };
      for (const info of children(readDer(content))) readContentInfo(info, password, bags);
      return bags;
    } catch (error) {
      // Without an integrity check, only decryption tells which of "no password" and "" the file was made with.
      if (i === passwords.length - 1) throw error;
    }
  }
  throw new PfxError('wrong-password', 'no password to try');
}

export interface PfxContents {
  privateKey: KeyObject;
  /** The DER of the certificate that goes with the key, when the file holds it. */
  certificate?: Buffer;
}

/**
 * The private key of a PFX and its certificate. `password` undefined: a PFX exported without one (tried as no
 * password and as the empty one). Throws a PfxError naming why it cannot.
 */
export function readPfx(file: Buffer, password?: string): PfxContents {
  const [version, authSafe, macData] = children(expectTag(readDer(file), SEQUENCE, 'the PFX'));
  if (integerOf(version) !== 3) throw new PfxError('unreadable', 'not a version 3 PFX');
  const [type, value] = children(expectTag(authSafe, SEQUENCE, 'the authenticated safe'));
  if (oidOf(type) !== OIDS.data) throw new PfxError('unsupported-encryption', 'a public-key protected PFX');
  const content = expectTag(explicitContent(value, 'the authenticated safe'), OCTET_STRING, 'the safe').body;
  const candidates = password === undefined ? [null, ''] : [password];
  const verified = macData ? candidates.filter((p) => macMatches(macData, content, p)) : candidates;
  if (verified.length === 0) throw new PfxError('wrong-password', 'the PFX integrity check fails with this password');
  const bags = readBags(content, verified);
  const [privateKey] = bags.keys;
  if (!privateKey)
    throw new PfxError(
      bags.unopened ? 'unsupported-encryption' : 'no-private-key',
      bags.unopened ? 'the PFX is encrypted with RC2, which is not supported' : 'the PFX holds no private key',
    );
  const certificate = bags.certificates.find((der) => new X509Certificate(der).checkPrivateKey(privateKey));
  return { privateKey, ...(certificate ? { certificate } : {}) };
}
