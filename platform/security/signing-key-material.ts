import {
  createHash,
  createPrivateKey,
  createPublicKey,
  sign,
  verify,
  constants,
  X509Certificate,
  type JsonWebKey,
  type KeyObject,
} from 'node:crypto';
import { readPfx } from './pkcs12';

/**
 * Private signing keys as the service keeps them (a JWK with its `kid`, its algorithm, for signatures), made from what
 * IdentityServer signed with: Duende's key containers, PEM and JWK files, PFX certificates.
 */

/** Duende IdentityServerConstants.SupportedSigningAlgorithms: the algorithms IdentityServer signs tokens with. */
export const SIGNING_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512'];

/** The curve each ECDSA algorithm signs on (Duende EcKeyContainer.ToSecurityKey). */
export const CURVE_OF: Record<string, string> = { ES256: 'P-256', ES384: 'P-384', ES512: 'P-521' };

/** `x5c`: the certificate of a key that came with one (a PFX, Duende's X509KeyContainer), DER in base64. */
export type PrivateSigningJwk = JsonWebKey & { kid: string; alg: string; use: 'sig'; x5c?: string[] };

/** Why a key cannot sign as it says: an algorithm IdentityServer does not sign with, or parameters that do not fit. */
export class SigningKeyError extends Error {
  constructor(
    readonly reason: 'unsupported-algorithm' | 'not-a-key',
    message: string,
  ) {
    super(message);
  }
}

/** The algorithm a key signs with when nothing says: RS256 for RSA (IdentityServer's default), ES* by its curve. */
export function defaultAlgorithm(key: KeyObject): string {
  if (key.asymmetricKeyType === 'rsa') return 'RS256';
  const crv = key.export({ format: 'jwk' }).crv;
  const alg = Object.keys(CURVE_OF).find((a) => CURVE_OF[a] === crv);
  if (key.asymmetricKeyType !== 'ec' || !alg)
    throw new SigningKeyError(
      'unsupported-algorithm',
      `a ${key.asymmetricKeyType} ${crv ?? ''} key cannot sign tokens`,
    );
  return alg;
}

/** A signature made and checked with the key's own public half: parameters that do not belong together fail it. */
function selfCheck(key: KeyObject, alg: string): void {
  const probe = Buffer.from('signing-key self-check');
  const hash = `sha${alg.slice(2)}`;
  const padding = alg.startsWith('PS') ? { padding: constants.RSA_PKCS1_PSS_PADDING } : {};
  try {
    const signature = sign(hash, probe, { key, ...padding });
    if (verify(hash, probe, { key: createPublicKey(key), ...padding }, signature)) return;
  } catch {
    // Falls through to the refusal below.
  }
  throw new SigningKeyError('not-a-key', "the key's parameters do not make a working key");
}

/**
 * The private JWK of a key that signs with `alg` under `kid`, in the form `crypto` exports it (minimal integers):
 * refused when the key type or curve does not fit the algorithm, or its parameters do not make a working key.
 */
export function signingJwk(key: KeyObject, alg: string, kid: string): PrivateSigningJwk {
  if (!SIGNING_ALGORITHMS.includes(alg))
    throw new SigningKeyError('unsupported-algorithm', `${alg} is not a signing algorithm IdentityServer uses`);
  const jwk = key.export({ format: 'jwk' });
  const fits = alg.startsWith('E') ? jwk.kty === 'EC' && jwk.crv === CURVE_OF[alg] : jwk.kty === 'RSA';
  if (!fits) throw new SigningKeyError('unsupported-algorithm', `a ${jwk.kty} ${jwk.crv ?? ''} key cannot sign ${alg}`);
  selfCheck(key, alg);
  return { ...jwk, kid, alg, use: 'sig' };
}

/** A private key from a JWK, refused as not a key when its members do not make one. */
export function privateKeyFromJwk(jwk: JsonWebKey): KeyObject {
  try {
    return createPrivateKey({ key: jwk, format: 'jwk' });
  } catch (error) {
    throw new SigningKeyError('not-a-key', `not a private key: ${(error as Error).message}`);
  }
}

/** RFC 7638 thumbprint: the key id of a PEM key when none is given. */
export function jwkThumbprint(jwk: JsonWebKey): string {
  const members =
    jwk.kty === 'EC' ? { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y } : { e: jwk.e, kty: jwk.kty, n: jwk.n };
  return createHash('sha256').update(JSON.stringify(members)).digest('base64url');
}

/**
 * The key id IdentityServer gives a certificate's key (Duende Crypto.cs AddSigningCredential(X509Certificate2):
 * `new X509SecurityKey(certificate)` takes the certificate's Thumbprint, upper-case hex SHA-1, and the algorithm's
 * name is appended to it).
 */
export const certificateKeyId = (certificate: Buffer, alg: string) =>
  `${new X509Certificate(certificate).fingerprint.replace(/:/g, '').toUpperCase()}${alg}`;

/**
 * The key with its certificate, as IdentityServer publishes an X509SecurityKey (DiscoveryResponseGenerator
 * TryGetJwkFromX509SecurityKey: `x5c` the certificate's DER in base64, `x5t` its SHA-1 hash, see
 * certificateThumbprint): APIs and clients that take the key from the certificate keep finding it after cutover. A
 * certificate that is not the key's is not published (the key alone is).
 */
export function withCertificate(jwk: PrivateSigningJwk, key: KeyObject, certificate: Buffer | undefined) {
  if (!certificate) return jwk;
  try {
    if (!new X509Certificate(certificate).checkPrivateKey(key)) return jwk;
  } catch {
    return jwk;
  }
  return { ...jwk, x5c: [certificate.toString('base64')] };
}

/** The `x5t` of a certificate in a JWK's `x5c` (RFC 7517 §4.8): its SHA-1 hash, base64url. */
export const certificateThumbprint = (x5c: string) =>
  createHash('sha1').update(Buffer.from(x5c, 'base64')).digest('base64url');

/**
 * A static signing key from a file an operator exported: a PFX (with `password`, or none), a PEM private key, or a
 * private JWK; RSA or EC. The kid is `kid`, else the JWK's own, the certificate's as IdentityServer names it, or the
 * RFC 7638 thumbprint; the algorithm is `alg`, else the JWK's, else RS256 or the curve's ES*.
 */
export function staticSigningKey(
  file: Buffer,
  { password, kid, alg }: { password?: string; kid?: string; alg?: string } = {},
): PrivateSigningJwk {
  const text = file
    .toString('utf8')
    .replace(/^\uFEFF/, '')
    .trim();
  if (text.startsWith('{')) {
    const given = JSON.parse(text) as JsonWebKey & { kid?: string; alg?: string };
    const key = privateKeyFromJwk(given);
    const algorithm = alg ?? given.alg ?? defaultAlgorithm(key);
    return signingJwk(key, algorithm, kid ?? given.kid ?? jwkThumbprint(key.export({ format: 'jwk' })));
  }
  if (text.startsWith('-----BEGIN')) {
    const key = createPrivateKey({ key: text, ...(password === undefined ? {} : { passphrase: password }) });
    return signingJwk(key, alg ?? defaultAlgorithm(key), kid ?? jwkThumbprint(key.export({ format: 'jwk' })));
  }
  const { privateKey, certificate } = readPfx(file, password);
  const algorithm = alg ?? defaultAlgorithm(privateKey);
  const keyId =
    kid ??
    (certificate ? certificateKeyId(certificate, algorithm) : jwkThumbprint(privateKey.export({ format: 'jwk' })));
  return withCertificate(signingJwk(privateKey, algorithm, keyId), privateKey, certificate);
}
