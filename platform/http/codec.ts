import type { Payload, PayloadCodec } from '@temporalio/common';
import express, { Router, type Request, type RequestHandler } from 'express';
import { z } from 'zod';
import { rejectJsonProblems } from './edge-guard';
import { describeIssues, sendProblem } from './problem';
import { isLoopbackAddress } from '../security/callback-address';
import { PayloadKeyMissingError } from '../security/payload-encryption';

export interface CodecDependencies {
  /** The service's payload codec; absent when Temporal:PayloadKeys is not configured. */
  codec?: PayloadCodec;
  /** Origins of the Temporal UIs whose pages may call the endpoint (CORS). */
  allowedOrigins: readonly string[];
  /** The IdentityAdmin policy, as the admin API applies it. */
  identityAdmin: RequestHandler;
  /** The embedded default only: a loopback caller without credentials is let through (its UI cannot send one). */
  openToLoopback: boolean;
}

/** A history page can carry many payloads; each is small, the whole batch bounded. */
const BATCH_LIMIT = '4mb';
const base64 = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64');
const bodySchema = z.object({
  payloads: z
    .array(z.object({ metadata: z.record(z.string().max(256), base64).optional(), data: base64.optional() }))
    .max(10_000),
});

const toPayload = (p: z.infer<typeof bodySchema>['payloads'][number]): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data ?? '', 'base64'),
});

const fromPayload = (p: Payload) => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
  ),
  data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
});

/**
 * Temporal's remote codec protocol, for the Temporal UI and `temporal workflow show --codec-endpoint`: `POST /codec/decode`
 * and `POST /codec/encode` take and answer `{ payloads: [{ metadata: { key: base64 }, data: base64 }] }`. Payloads
 * the service did not seal pass through unchanged, so the namespace in `X-Namespace` does not change the answer.
 */
export function codecRouter({ codec, allowedOrigins, identityAdmin, openToLoopback }: CodecDependencies): Router {
  const router = Router();

  // Browsers ask first (the UI sends JSON and X-Namespace); only the configured UI origins get an answer they can use.
  router.use((req, res, next) => {
    const origin = req.get('origin');
    if (origin && allowedOrigins.includes(origin)) {
      res.set({
        'Access-Control-Allow-Origin': origin,
        'Access-Control-Allow-Methods': 'POST, OPTIONS',
        'Access-Control-Allow-Headers': 'Content-Type, X-Namespace, Authorization',
        'Access-Control-Allow-Credentials': 'true',
        'Access-Control-Max-Age': '600',
      });
    }
    res.vary('Origin');
    if (req.method === 'OPTIONS') return void res.status(204).end();
    next();
  });

  // A forwarded request is never a loopback caller's own, whatever the connection's address: a reverse proxy on this
  // machine may be passing on a remote caller (and req.ip believes X-Forwarded-For only from Api:TrustedProxies).
  const forwarded = (req: Request) => req.get('x-forwarded-for') !== undefined || req.get('forwarded') !== undefined;
  const authorize: RequestHandler = (req, res, next) =>
    openToLoopback && req.get('authorization') === undefined && isLoopbackAddress(req.ip) && !forwarded(req)
      ? next()
      : identityAdmin(req, res, next);

  for (const operation of ['encode', 'decode'] as const) {
    router.post(
      `/${operation}`,
      authorize,
      express.json({ limit: BATCH_LIMIT }),
      rejectJsonProblems(),
      async (req, res) => {
        if (!codec)
          return sendProblem(res, {
            status: 503,
            title: 'Codec unavailable',
            detail: 'Temporal:PayloadKeys is not configured, so this service neither seals nor opens payloads',
          });
        const parsed = bodySchema.safeParse(req.body);
        if (!parsed.success)
          return sendProblem(res, { status: 400, title: 'Invalid request', detail: describeIssues(parsed.error) });
        const payloads = parsed.data.payloads.map(toPayload);
        let answered: Payload[];
        try {
          answered = await (operation === 'encode' ? codec.encode(payloads) : codec.decode(payloads));
        } catch (error) {
          // An unknown key id, or a payload altered after it was sealed.
          return sendProblem(res, {
            status: 422,
            title: 'Payload cannot be opened',
            detail: error instanceof PayloadKeyMissingError ? error.message : 'a payload failed authentication',
          });
        }
        res.json({ payloads: answered.map(fromPayload) });
      },
    );
  }
  return router;
}
