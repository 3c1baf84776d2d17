import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import { uuidV5 } from '../security/name-based-uuid';
import { claimIdempotencyKey, saveIdempotentAnswer } from '../store/idempotency-keys';
import type { Db } from '../store/database';
import type { StoredAnswer } from '../store/schema';
import { bearerToken } from './bearer';
import { sendError } from './problem';

const KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** JSON with keys in a fixed order, so the same body always has the same fingerprint. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`);
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** The body without its password: no digest of a password is ever stored, salted or not. */
function fingerprint(body: unknown): string {
  const rest =
    body && typeof body === 'object' && !Array.isArray(body)
      ? Object.fromEntries(Object.entries(body).filter(([k]) => k !== 'password'))
      : body;
  return sha256(canonical(rest));
}

/** The creation routes that take an Idempotency-Key; a key is scoped to one of them (and to the caller's credential). */
export type IdempotentRoute = 'POST /api/v1/profile' | 'POST /scim/v2/Users';

export function send(res: Response, answer: StoredAnswer): void {
  res
    .status(answer.status)
    .set(answer.headers ?? {})
    .type(answer.contentType)
    .send(JSON.stringify(answer.body));
}

/**
 * `Idempotency-Key` on a creation endpoint, scoped to the caller's credential and kept 24 h: the same key with the
 * same body gets the same attempt's answer (waiting for it while it runs, since the key fixes the new user's id and so
 * the attempt's workflow); the same key with another body is refused with 422. Without the header, `create` gets a
 * fresh id. An attempt that is still in progress (409), unreachable (503) or past the deadline (504) is thrown, not
 * answered, so its key stays open and the request can be asked again; of the answers, those below 500 are kept.
 */
export async function idempotentCreation(
  db: Db,
  route: IdempotentRoute,
  req: Request,
  res: Response,
  create: (userId: string | undefined) => Promise<StoredAnswer>,
): Promise<void> {
  const key = req.get('idempotency-key');
  if (key === undefined) return send(res, await create(undefined));
  if (!KEY_PATTERN.test(key)) {
    return sendError(req, res, {
      status: 400,
      title: 'Invalid request',
      detail: 'Idempotency-Key: 1-255 visible ASCII characters',
      kind: 'invalidValue',
    });
  }
  // The route, not the path as spelled: Express matches paths case-insensitively, so `/API/V1/PROFILE/` reaches the
  // same creation and must meet the same keys.
  const scope = sha256(`${route}\n${bearerToken(req) ?? ''}`);
  const claim = await claimIdempotencyKey(db, scope, key, fingerprint(req.body));
  if (claim.status === 'other-body') {
    return sendError(req, res, {
      status: 422,
      title: 'Idempotency-Key reused',
      type: 'urn:problem-type:idempotency-key-reused',
      detail: `Idempotency-Key ${key} was used with another body in the last 24 h; use a new key for a new request`,
    });
  }
  if (claim.status === 'answered') return send(res, claim.answer);
  const answer = await create(uuidV5(`idempotency:${scope}:${key}`));
  if (answer.status < 500) await saveIdempotentAnswer(db, scope, key, answer);
  send(res, answer);
}
