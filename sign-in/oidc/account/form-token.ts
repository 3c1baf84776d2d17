import { createHmac, timingSafeEqual } from 'node:crypto';
import { escapeHtml } from '../../../platform/http/html';

/**
 * The anti-forgery token of a signed-in user's forms, as ASP.NET Core's antiforgery puts one in every form it renders
 * (`__RequestVerificationToken`) and refuses a post without it: a keyed hash of the session's id, so only a page this
 * service rendered for this session carries it, a form posted from another site does not, and it dies with the session.
 * Kept nowhere: any API process holding the key ring checks it.
 */
export const FORM_TOKEN_FIELD = '__RequestVerificationToken';

export const formToken = (key: Buffer, sessionId: string) =>
  createHmac('sha256', key).update(`account-form:${sessionId}`).digest('base64url');

/** Whether `value` is the session's token (compared in constant time). */
export function isFormToken(key: Buffer, sessionId: string, value: unknown): boolean {
  if (typeof value !== 'string') return false;
  const expected = Buffer.from(formToken(key, sessionId));
  const given = Buffer.from(value);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** The token as the hidden field of a form (every form of the account pages, the sign-up form). */
export const formTokenField = (token: string) =>
  `<input type="hidden" name="${FORM_TOKEN_FIELD}" value="${escapeHtml(token)}">`;
