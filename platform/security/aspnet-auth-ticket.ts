/**
 * ASP.NET Core's cookie authentication ticket, read (and, for fixtures, written) as the source wrote it, so a browser
 * signed in at the source can be recognised here. Built from the `dotnet/aspnetcore` sources:
 * - src/Security/Authentication/Core/src/TicketSerializer.cs (format 5): the scheme, the principal's identities, each
 *   with its claims, bootstrap context and actor, then the properties; a string equal to its default is written as
 *   the placeholder "\0" (WriteWithDefault / ReadWithDefault).
 * - src/Http/Authentication.Abstractions/src/PropertiesSerializer.cs (format 1): the properties' items as key/value
 *   string pairs (`.issued`, `.expires`, `.persistent`, Duende's `session_id`).
 * - System.IO.BinaryWriter: Int32 little-endian, Boolean one byte, String a 7-bit encoded length then UTF-8.
 * - src/Shared/ChunkingCookieManager/ChunkingCookieManager.cs: a long value is sent as `chunks-N` under the cookie's
 *   name and its parts as `{name}C1` .. `{name}CN`.
 * - src/Security/Authentication/Cookies/src/PostConfigureCookieAuthenticationOptions.cs: the ticket is protected for
 *   the purposes `Microsoft.AspNetCore.Authentication.Cookies.CookieAuthenticationMiddleware`, the scheme, `v2`, and
 *   SecureDataFormat.cs writes it base64url.
 */

const TICKET_FORMAT = 5;
const PROPERTIES_FORMAT = 1;
const PLACEHOLDER = '\0';
// ClaimsIdentity.DefaultNameClaimType, DefaultRoleClaimType, ClaimValueTypes.String, ClaimsIdentity.DefaultIssuer.
export const NAME_CLAIM_TYPE = 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name';
export const ROLE_CLAIM_TYPE = 'http://schemas.microsoft.com/ws/2008/06/identity/claims/role';
const STRING_VALUE_TYPE = 'http://www.w3.org/2001/XMLSchema#string';
const LOCAL_AUTHORITY = 'LOCAL AUTHORITY';

/** The purposes CookieAuthenticationHandler's data protector is made with, after the application name. */
export const cookiePurposes = (scheme: string) => [
  'Microsoft.AspNetCore.Authentication.Cookies.CookieAuthenticationMiddleware',
  scheme,
  'v2',
];

export interface TicketClaim {
  type: string;
  value: string;
  valueType?: string;
  issuer?: string;
  originalIssuer?: string;
  properties?: Record<string, string>;
}

export interface TicketIdentity {
  authenticationType: string;
  nameClaimType?: string;
  roleClaimType?: string;
  claims: TicketClaim[];
  bootstrapContext?: string;
  actor?: TicketIdentity;
}

export interface AuthenticationTicket {
  scheme: string;
  identities: TicketIdentity[];
  properties: Record<string, string>;
}

/** Not a ticket of the format read here (another version, cut short, or not a ticket at all). */
export class TicketFormatError extends Error {}

class Reader {
  private at = 0;
  constructor(private readonly bytes: Buffer) {}
  private need(n: number) {
    if (n < 0 || this.at + n > this.bytes.length) throw new TicketFormatError('the ticket ends too soon');
  }
  int32(): number {
    this.need(4);
    const v = this.bytes.readInt32LE(this.at);
    this.at += 4;
    return v;
  }
  boolean(): boolean {
    this.need(1);
    return this.bytes[this.at++] !== 0;
  }
  string(): string {
    let length = 0;
    for (let shift = 0; ; shift += 7) {
      if (shift > 28) throw new TicketFormatError('a string length is malformed');
      this.need(1);
      const b = this.bytes[this.at++];
      length |= (b & 0x7f) << shift;
      if (b < 0x80) break;
    }
    this.need(length);
    const text = this.bytes.toString('utf8', this.at, this.at + length);
    this.at += length;
    return text;
  }
  withDefault(defaultValue: string): string {
    const text = this.string();
    return text === PLACEHOLDER ? defaultValue : text;
  }
  count(): number {
    const n = this.int32();
    // Every entry takes at least a byte: a larger count is not a ticket (and would loop for nothing).
    if (n < 0 || n > this.bytes.length - this.at) throw new TicketFormatError('a count is out of range');
    return n;
  }
  get done() {
    return this.at === this.bytes.length;
  }
}

class Writer {
  private readonly parts: Buffer[] = [];
  int32(v: number) {
    const b = Buffer.alloc(4);
    b.writeInt32LE(v);
    this.parts.push(b);
  }
  boolean(v: boolean) {
    this.parts.push(Buffer.from([v ? 1 : 0]));
  }
  string(text: string) {
    const utf8 = Buffer.from(text, 'utf8');
    const length: number[] = [];
    for (let v = utf8.length; ; v >>>= 7) {
      if (v < 0x80) {
        length.push(v);
        break;
      }
      length.push((v & 0x7f) | 0x80);
    }
    this.parts.push(Buffer.from(length), utf8);
  }
  pair(key: string, value: string) {
    this.string(key);
    this.string(value);
  }
  withDefault(value: string | undefined, defaultValue: string) {
    this.string(value === undefined || value === defaultValue ? PLACEHOLDER : value);
  }
  bytes() {
    return Buffer.concat(this.parts);
  }
}

/** TicketSerializer.ReadClaim: the type's default is the identity's name claim type, the original issuer's the issuer. */
function readClaim(r: Reader, nameClaimType: string): TicketClaim {
  const type = r.withDefault(nameClaimType);
  const value = r.string();
  const valueType = r.withDefault(STRING_VALUE_TYPE);
  const issuer = r.withDefault(LOCAL_AUTHORITY);
  const originalIssuer = r.withDefault(issuer);
  const properties: Record<string, string> = {};
  for (let n = r.count(); n > 0; n--) properties[r.string()] = r.string();
  return { type, value, valueType, issuer, originalIssuer, properties };
}

function readIdentity(r: Reader, depth = 0): TicketIdentity {
  if (depth > 8) throw new TicketFormatError('actors nest too deep');
  const authenticationType = r.string();
  const nameClaimType = r.withDefault(NAME_CLAIM_TYPE);
  const roleClaimType = r.withDefault(ROLE_CLAIM_TYPE);
  const claims: TicketClaim[] = [];
  for (let n = r.count(); n > 0; n--) claims.push(readClaim(r, nameClaimType));
  const bootstrapContext = r.boolean() ? r.string() : undefined;
  const actor = r.boolean() ? readIdentity(r, depth + 1) : undefined;
  return { authenticationType, nameClaimType, roleClaimType, claims, bootstrapContext, actor };
}

/** TicketSerializer.Deserialize; throws TicketFormatError for anything else. */
export function readTicket(bytes: Buffer): AuthenticationTicket {
  const r = new Reader(bytes);
  if (r.int32() !== TICKET_FORMAT) throw new TicketFormatError('not a format-5 authentication ticket');
  const scheme = r.string();
  const identities: TicketIdentity[] = [];
  for (let n = r.count(); n > 0; n--) identities.push(readIdentity(r));
  if (r.int32() !== PROPERTIES_FORMAT) throw new TicketFormatError('not format-1 authentication properties');
  const properties: Record<string, string> = {};
  for (let n = r.count(); n > 0; n--) properties[r.string()] = r.string();
  if (!r.done) throw new TicketFormatError('bytes follow the ticket');
  return { scheme, identities, properties };
}

function writeIdentity(w: Writer, identity: TicketIdentity): void {
  const nameClaimType = identity.nameClaimType ?? NAME_CLAIM_TYPE;
  w.string(identity.authenticationType);
  w.withDefault(nameClaimType, NAME_CLAIM_TYPE);
  w.withDefault(identity.roleClaimType, ROLE_CLAIM_TYPE);
  w.int32(identity.claims.length);
  for (const claim of identity.claims) {
    const issuer = claim.issuer ?? LOCAL_AUTHORITY;
    w.withDefault(claim.type, nameClaimType);
    w.string(claim.value);
    w.withDefault(claim.valueType, STRING_VALUE_TYPE);
    w.withDefault(issuer, LOCAL_AUTHORITY);
    w.withDefault(claim.originalIssuer, issuer);
    const properties = Object.entries(claim.properties ?? {});
    w.int32(properties.length);
    for (const [k, v] of properties) w.pair(k, v);
  }
  w.boolean(!!identity.bootstrapContext);
  if (identity.bootstrapContext) w.string(identity.bootstrapContext);
  w.boolean(!!identity.actor);
  if (identity.actor) writeIdentity(w, identity.actor);
}

/** TicketSerializer.Serialize (fixtures: tests build the source's cookies from the published format). */
export function writeTicket(ticket: AuthenticationTicket): Buffer {
  const w = new Writer();
  w.int32(TICKET_FORMAT);
  w.string(ticket.scheme);
  w.int32(ticket.identities.length);
  for (const identity of ticket.identities) writeIdentity(w, identity);
  w.int32(PROPERTIES_FORMAT);
  const items = Object.entries(ticket.properties);
  w.int32(items.length);
  for (const [k, v] of items) w.pair(k, v);
  return w.bytes();
}

/**
 * The cookie's value as ChunkingCookieManager.GetRequestCookie reassembles it: `chunks-N` stands for the chunks
 * `{name}C1`..`{name}CN` joined; a missing chunk gives nothing (the cookie is not whole).
 */
export function reassembleChunkedCookie(cookies: Record<string, string>, name: string): string | undefined {
  const value = cookies[name];
  const chunks = value === undefined ? undefined : /^chunks-(\d{1,3})$/.exec(value);
  if (!chunks) return value;
  const parts: string[] = [];
  for (let i = 1; i <= Number(chunks[1]); i++) {
    const part = cookies[`${name}C${i}`];
    if (part === undefined) return undefined;
    parts.push(part);
  }
  return parts.join('');
}

/** ChunkingCookieManager.AppendResponseCookie's chunks for a value (fixtures), as name → value pairs. */
export function chunkCookie(name: string, value: string, chunkSize = 4050): Record<string, string> {
  if (value.length <= chunkSize) return { [name]: value };
  const out: Record<string, string> = {};
  const count = Math.ceil(value.length / chunkSize);
  out[name] = `chunks-${count}`;
  for (let i = 0; i < count; i++) out[`${name}C${i + 1}`] = value.slice(i * chunkSize, (i + 1) * chunkSize);
  return out;
}
