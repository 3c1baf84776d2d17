import {
  chunkCookie,
  NAME_CLAIM_TYPE,
  readTicket,
  reassembleChunkedCookie,
  TicketFormatError,
  writeTicket,
} from '../../platform/security/aspnet-auth-ticket';

// The bytes of a ticket as TicketSerializer (format 5) and BinaryWriter write it, spelled out by hand from
// aspnetcore's src/Security/Authentication/Core/src/TicketSerializer.cs and PropertiesSerializer.cs.
const str = (text: string) => {
  const utf8 = Buffer.from(text, 'utf8');
  return Buffer.concat([Buffer.from([utf8.length]), utf8]);
};
const int = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeInt32LE(n);
  return b;
};
const HAND_WRITTEN = Buffer.concat([
  int(5),
  str('Identity.Application'),
  int(1),
  // The identity: authentication type, then the name and role claim types as the "\0" placeholder (the defaults).
  str('Identity.Application'),
  str('\0'),
  str('\0'),
  int(2),
  // A claim of the name claim type, string-valued, issued by LOCAL AUTHORITY: all four as placeholders.
  str('\0'),
  str('alice@example.test'),
  str('\0'),
  str('\0'),
  str('\0'),
  int(0),
  // A claim with its own issuer; its original issuer is the placeholder, which reads as that issuer.
  str('AspNet.Identity.SecurityStamp'),
  str('STAMP'),
  str('\0'),
  str('https://source.example'),
  str('\0'),
  int(1),
  str('prop'),
  str('value'),
  Buffer.from([0, 0]),
  int(1),
  int(2),
  str('.issued'),
  str('Fri, 27 Nov 2026 06:00:00 GMT'),
  str('session_id'),
  str('ABC'),
]);

describe("ASP.NET Core's authentication ticket", () => {
  test('reads the published format, placeholders standing for their defaults', () => {
    const ticket = readTicket(HAND_WRITTEN);
    expect(ticket.scheme).toBe('Identity.Application');
    expect(ticket.properties).toEqual({ '.issued': 'Fri, 27 Nov 2026 06:00:00 GMT', session_id: 'ABC' });
    const [identity] = ticket.identities;
    expect(identity.nameClaimType).toBe(NAME_CLAIM_TYPE);
    expect(identity.claims[0]).toMatchObject({
      type: NAME_CLAIM_TYPE,
      value: 'alice@example.test',
      valueType: 'http://www.w3.org/2001/XMLSchema#string',
      issuer: 'LOCAL AUTHORITY',
      originalIssuer: 'LOCAL AUTHORITY',
    });
    expect(identity.claims[1]).toMatchObject({
      issuer: 'https://source.example',
      originalIssuer: 'https://source.example',
      properties: { prop: 'value' },
    });
  });

  test('writes the same bytes (the fixtures of the integration tests are the published format)', () => {
    expect(writeTicket(readTicket(HAND_WRITTEN)).equals(HAND_WRITTEN)).toBe(true);
  });

  test.each([
    ['another format version', Buffer.concat([int(4), HAND_WRITTEN.subarray(4)])],
    ['cut short', HAND_WRITTEN.subarray(0, HAND_WRITTEN.length - 3)],
    ['bytes after the ticket', Buffer.concat([HAND_WRITTEN, Buffer.from([0])])],
    ['a count past the end', Buffer.concat([int(5), str('s'), int(1_000_000)])],
    ['nothing', Buffer.alloc(0)],
  ])('%s is not a ticket', (_label, bytes) => {
    expect(() => readTicket(bytes)).toThrow(TicketFormatError);
  });

  test('chunked cookies are joined as ChunkingCookieManager sends them; a missing chunk gives nothing', () => {
    const value = 'x'.repeat(250);
    const cookies = chunkCookie('.auth', value, 100);
    expect(cookies).toEqual({
      '.auth': 'chunks-3',
      '.authC1': 'x'.repeat(100),
      '.authC2': 'x'.repeat(100),
      '.authC3': 'x'.repeat(50),
    });
    expect(reassembleChunkedCookie(cookies, '.auth')).toBe(value);
    const { '.authC2': _missing, ...partial } = cookies;
    expect(reassembleChunkedCookie(partial, '.auth')).toBeUndefined();
    expect(reassembleChunkedCookie({ '.auth': 'plain' }, '.auth')).toBe('plain');
  });
});
