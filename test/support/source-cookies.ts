import { randomUUID } from 'node:crypto';
import { protect } from '../../platform/security/aspnet-data-protection';
import {
  chunkCookie,
  cookiePurposes,
  NAME_CLAIM_TYPE,
  writeTicket,
  type TicketClaim,
} from '../../platform/security/aspnet-auth-ticket';
import { SOURCE_APPLICATION_NAME, type SourceKey } from './source-protection';

export const SOURCE_COOKIE = '.AspNetCore.Identity.Application';
const SCHEME = 'Identity.Application';
const NAME_IDENTIFIER = 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/nameidentifier';
const EMAIL = 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress';

export interface SourceSignInFixture {
  userId: string;
  email: string;
  stamp: string;
  /** Duende's session id (the `sid` of the source's ID tokens). */
  sessionId?: string;
  authTime?: number;
  issued?: Date;
  expires?: Date;
  idp?: string;
  amr?: string[];
}

/**
 * The principal a Duende IdentityServer host with ASP.NET Identity signs in: UserClaimsPrincipalFactory's claims (id,
 * name, e-mail, security stamp) and those Duende's AugmentPrincipal adds (sub, auth_time, idp, amr).
 */
function claimsOf(f: SourceSignInFixture, authTime: number): TicketClaim[] {
  return [
    { type: NAME_IDENTIFIER, value: f.userId },
    { type: NAME_CLAIM_TYPE, value: f.email },
    { type: EMAIL, value: f.email },
    { type: 'AspNet.Identity.SecurityStamp', value: f.stamp },
    { type: 'sub', value: f.userId },
    { type: 'auth_time', value: String(authTime), valueType: 'http://www.w3.org/2001/XMLSchema#integer64' },
    { type: 'idp', value: f.idp ?? 'local' },
    ...(f.amr ?? ['pwd']).map((value) => ({ type: 'amr', value })),
  ];
}

/** The ticket of a source sign-in as TicketSerializer writes it (format 5, properties format 1). */
export function sourceTicket(f: SourceSignInFixture): Buffer {
  const issued = f.issued ?? new Date(Date.now() - 60_000);
  const authTime = f.authTime ?? Math.floor(issued.getTime() / 1000);
  const expires = f.expires ?? new Date(issued.getTime() + 14 * 86_400_000);
  return writeTicket({
    scheme: SCHEME,
    identities: [{ authenticationType: 'Identity.Application', claims: claimsOf(f, authTime) }],
    properties: {
      '.issued': issued.toUTCString(),
      '.expires': expires.toUTCString(),
      '.persistent': '',
      ...(f.sessionId ? { session_id: f.sessionId } : {}),
    },
  });
}

/** The cookie's value as CookieAuthenticationHandler writes it: protected for its purposes, base64url. */
export function protectTicket(
  ticket: Buffer,
  key: SourceKey,
  applicationName = SOURCE_APPLICATION_NAME,
  scheme = SCHEME,
): string {
  return protect(key, [applicationName, ...cookiePurposes(scheme)], ticket).toString('base64url');
}

/** The cookies a browser holds for a source sign-in: one, or chunks of `chunkSize` as ChunkingCookieManager sends. */
export function sourceCookies(f: SourceSignInFixture, key: SourceKey, chunkSize?: number): Record<string, string> {
  return chunkCookie(SOURCE_COOKIE, protectTicket(sourceTicket(f), key), chunkSize);
}

export const newSourceSessionId = () => randomUUID().replace(/-/g, '').toUpperCase();
