import {
  DataProtectionError,
  parseKeyRing,
  readKeyRingFolder,
  unprotect,
  type DataProtectionKeyRing,
} from '../../platform/security/aspnet-data-protection';
import {
  cookiePurposes,
  readTicket,
  reassembleChunkedCookie,
  TicketFormatError,
} from '../../platform/security/aspnet-auth-ticket';
import type { KeyRing } from '../../platform/security/data-protection';
import { FIELD_BOUNDS } from '../../platform/security/field-bounds';
import type { Db } from '../../platform/store/database';
import { readKeptSourceKeyRing } from '../../platform/store/source-key-ring';

/** Who a source cookie names and how that browser signed in at the source. */
export interface SourceSignIn {
  subject: string;
  /** The name ASP.NET Identity gave the user (its e-mail address as a rule), to read a late user through by. */
  email?: string;
  securityStamp?: string;
  issuedAt?: Date;
  expiresAt?: Date;
  /** Duende's `auth_time` (epoch seconds); the ticket's `.issued` when the source did not add one. */
  authTime: number;
  amr: string[];
  idp: string;
  /** Duende's session id (`session_id`), the `sid` the source's ID tokens carried. */
  sessionId?: string;
  persistent: boolean;
}

/** Why a cookie that is there does not open: each a count (source_sessions_total). */
export type Unopened = 'unreadable' | 'unknown-key' | 'not-a-ticket' | 'no-subject';

const CLAIM = {
  nameIdentifier: 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/nameidentifier',
  email: 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress',
  name: 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name',
  // ASP.NET Identity's ClaimsIdentityOptions.SecurityStampClaimType.
  securityStamp: 'AspNet.Identity.SecurityStamp',
};

/** The request's cookies by name (RFC 6265 §5.4), the first of two with one name winning. */
export function requestCookies(header: string | undefined): Record<string, string> {
  const cookies: Record<string, string> = {};
  for (const pair of (header ?? '').split(';')) {
    const at = pair.indexOf('=');
    if (at < 1) continue;
    const name = pair.slice(0, at).trim();
    if (!(name in cookies)) cookies[name] = pair.slice(at + 1).trim();
  }
  return cookies;
}

/** The cookie's value whole (chunks joined), or undefined when the browser sent none. */
export function sourceCookieOf(header: string | undefined, name: string): string | undefined {
  return reassembleChunkedCookie(requestCookies(header), name);
}

/** `.issued` and `.expires` are DateTimeOffset.ToString("r") (RFC 1123); anything else counts as absent. */
const dateOf = (text: string | undefined) => {
  const date = text ? new Date(text) : undefined;
  return date && !Number.isNaN(date.getTime()) ? date : undefined;
};

/**
 * The ticket in the cookie, opened as CookieAuthenticationHandler opens it (SecureDataFormat: base64url, unprotected
 * for the application name, the cookie middleware's purpose, the scheme and `v2`; TicketSerializer).
 */
export function openSourceTicket(
  ring: DataProtectionKeyRing,
  applicationName: string,
  scheme: string,
  value: string,
): SourceSignIn | Unopened {
  let ticket;
  try {
    const payload = Buffer.from(decodeURIComponent(value), 'base64url');
    ticket = readTicket(unprotect(ring, [applicationName, ...cookiePurposes(scheme)], payload));
  } catch (error) {
    if (error instanceof TicketFormatError) return 'not-a-ticket';
    if (error instanceof DataProtectionError && error.reason === 'unknown-key') return 'unknown-key';
    return 'unreadable';
  }
  const claims = ticket.identities.flatMap((identity) => identity.claims);
  const first = (type: string) => claims.find((c) => c.type === type)?.value;
  const subject = first('sub') ?? first(CLAIM.nameIdentifier);
  if (!subject) return 'no-subject';
  const issuedAt = dateOf(ticket.properties['.issued']);
  const idp = boundedIdp(first('idp'));
  const amr = claims.filter((c) => c.type === 'amr').map((c) => c.value);
  const authTime = Number(first('auth_time'));
  return {
    subject,
    email: first(CLAIM.email) ?? first(CLAIM.name),
    securityStamp: first(CLAIM.securityStamp),
    issuedAt,
    expiresAt: dateOf(ticket.properties['.expires']),
    authTime: Number.isSafeInteger(authTime) ? authTime : Math.floor((issuedAt?.getTime() ?? Date.now()) / 1000),
    // Duende's AugmentPrincipal: `pwd` for a local sign-in, `external` for one at another provider.
    amr: amr.length > 0 ? amr : [idp === 'local' ? 'pwd' : 'external'],
    idp,
    sessionId: ticket.properties.session_id,
    persistent: '.persistent' in ticket.properties,
  };
}

/** An idp name: printable (no control, format or unassigned characters), no edge spaces, at most FIELD_BOUNDS.id. */
const IDP_NAME = /^[^\p{C}\s](?:[^\p{C}]*[^\p{C}\s])?$/u;

/**
 * The ticket's `idp` claim, which Duende sets to "local" or the external scheme's name ("Google", "aad"). It goes into
 * every token of the session, so a value that is no such name (too long, control characters, empty) is normalised to
 * "external" rather than refused: the source did sign the user in elsewhere, and the sign-in itself is sound.
 */
function boundedIdp(claim: string | undefined): string {
  if (claim === undefined) return 'local';
  return claim.length <= FIELD_BOUNDS.id && IDP_NAME.test(claim) ? claim : 'external';
}

/** The key ring is read again at most this often, so keys a later sweep kept are found. */
const KEY_RING_SECONDS = 60;

/**
 * The source's key ring: the folder at Migration:SourceDataProtection:KeyRingPath when set, else the copy the
 * migration kept sealed in the store (platform/store/source-key-ring.ts).
 */
export function sourceKeyRingReader(db: Db, ring: KeyRing, keyRingPath: string | undefined) {
  let cached: { loaded: Promise<DataProtectionKeyRing>; at: number } | undefined;
  return (): Promise<DataProtectionKeyRing> => {
    if (!cached || Date.now() - cached.at > KEY_RING_SECONDS * 1000) {
      const documents = keyRingPath ? readKeyRingFolder(keyRingPath) : readKeptSourceKeyRing(db, ring);
      const loaded = documents.then((docs) => parseKeyRing(docs.map((d) => d.xml)));
      // A ring that could not be read is tried again at the next request, not kept for a minute.
      loaded.catch(() => (cached = undefined));
      cached = { loaded, at: Date.now() };
    }
    return cached.loaded;
  };
}
