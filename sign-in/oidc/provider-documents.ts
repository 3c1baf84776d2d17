import { createHash } from 'node:crypto';
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { Request, Response } from 'express';
import { certificateThumbprint } from '../../platform/security/signing-key-material';
import { DISCOVERY_PATH, OIDC_ROUTES } from '../sign-in-paths';

/** A public document of the provider as it answered it once: its body, type and validator. */
export interface PublishedDocument {
  body: Buffer;
  contentType: string;
  etag: string;
}

/** The provider's public documents by path: discovery and the JWKS, the same for every client until it is rebuilt. */
export type PublishedDocuments = ReadonlyMap<string, PublishedDocument>;

type Callback = (req: IncomingMessage, res: ServerResponse) => unknown;

/** A document with its validator: a digest of the body. */
const documentOf = (body: Buffer, contentType: string): PublishedDocument => ({
  body,
  contentType,
  etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
});

/**
 * One GET answered by the provider in process, as a request from outside would be (Api:PublicUrl's host and scheme,
 * its path as the mount path, see sign-in-router.ts forwardedAsExpressSees): what it sends is kept, nothing goes out.
 */
function answerInProcess(callback: Callback, issuer: string, path: string): Promise<PublishedDocument> {
  const base = new URL(issuer);
  const req = new IncomingMessage(new Socket());
  req.method = 'GET';
  req.url = path;
  req.headers = { host: base.host, 'x-forwarded-proto': base.protocol.replace(':', '') };
  (req as IncomingMessage & { originalUrl: string }).originalUrl = `${base.pathname.replace(/\/+$/, '')}${path}`;
  req.push(null);
  const res = new ServerResponse(req);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const keep = (chunk: unknown) => {
      if (chunk !== undefined && chunk !== null && typeof chunk !== 'function')
        chunks.push(Buffer.from(chunk as string | Uint8Array));
    };
    res.write = ((chunk: unknown) => (keep(chunk), true)) as typeof res.write;
    res.end = ((chunk?: unknown) => {
      keep(chunk);
      if (res.statusCode !== 200) reject(new Error(`sign-in: ${path} answered ${res.statusCode} in process`));
      else
        resolve(
          documentOf(Buffer.concat(chunks), String(res.getHeader('content-type') ?? 'application/json; charset=utf-8')),
        );
      return res;
    }) as typeof res.end;
    Promise.resolve(callback(req, res)).catch(reject);
  });
}

/**
 * The JWKS with each certificate's `x5t` beside its `x5c`, as IdentityServer publishes a certificate's key
 * (DiscoveryResponseGenerator TryGetJwkFromX509SecurityKey); oidc-provider publishes `x5c` and drops `x5t`.
 */
function withCertificateThumbprints(answer: PublishedDocument): PublishedDocument {
  const jwks = JSON.parse(answer.body.toString('utf8')) as { keys: Array<Record<string, unknown>> };
  if (!jwks.keys.some((key) => Array.isArray(key.x5c))) return answer;
  jwks.keys = jwks.keys.map(({ x5c, ...key }) =>
    Array.isArray(x5c) ? { ...key, x5t: certificateThumbprint(String(x5c[0])), x5c } : key,
  );
  return documentOf(Buffer.from(JSON.stringify(jwks)), answer.contentType);
}

/** Discovery and the JWKS as a provider build answers them; made once per build (the key set changes only then). */
export async function publishedDocuments(callback: Callback, issuer: string): Promise<PublishedDocuments> {
  const [discovery, jwks] = await Promise.all(
    [DISCOVERY_PATH, OIDC_ROUTES.jwks].map((path) => answerInProcess(callback, issuer, path)),
  );
  return new Map([
    [DISCOVERY_PATH, discovery],
    [OIDC_ROUTES.jwks, withCertificateThumbprints(jwks)],
  ]);
}

/**
 * Answers a GET or HEAD of discovery or the JWKS from the build's copy, with the headers the provider sends (CORS open
 * to every origin, as oidc-provider's `CORS.open`) and the caching Duende IdentityServer sends: its
 * DiscoveryDocumentHttpWriter and JsonWebKeysHttpWriter (Endpoints/Results/DiscoveryDocumentResult.cs,
 * JsonWebKeysResult.cs) call `Response.SetCache(Discovery.ResponseCacheInterval, "Origin")`
 * (Extensions/HttpResponseExtensions.cs): `max-age=N` and `Vary: Origin` for N > 0, `no-store, no-cache,
 * max-age=0` and `Pragma: no-cache` for 0, nothing when unset. The ETag (a digest of the body) is the service's own:
 * a client that revalidates gets 304 without the body. Returns false for anything else, which the provider answers.
 */
export function answerFromCopy(
  documents: PublishedDocuments,
  req: Request,
  res: Response,
  cacheInterval: number | undefined,
): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  const document = documents.get(req.path);
  if (!document) return false;
  res.setHeader('Vary', 'Origin');
  res.setHeader('Access-Control-Allow-Origin', req.headers.origin ?? '*');
  if (cacheInterval === 0) res.set({ 'Cache-Control': 'no-store, no-cache, max-age=0', Pragma: 'no-cache' });
  else if (cacheInterval !== undefined) res.setHeader('Cache-Control', `max-age=${cacheInterval}`);
  res.setHeader('ETag', document.etag);
  if (isRevalidated(req.headers['if-none-match'], document.etag)) {
    res.statusCode = 304;
    res.end();
    return true;
  }
  res.setHeader('Content-Type', document.contentType);
  res.setHeader('Content-Length', document.body.length);
  res.statusCode = 200;
  res.end(req.method === 'HEAD' ? undefined : document.body);
  return true;
}

/** If-None-Match (RFC 9110 §13.1.2): `*`, or a list of entity tags compared weakly (a `W/` prefix ignored). */
function isRevalidated(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((tag) => tag.trim().replace(/^W\//, '') === etag);
}
