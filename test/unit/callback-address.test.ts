import { callbackUrlProblem, isLoopbackAddress, parseAllowList } from '../../platform/security/callback-address';

const none = parseAllowList([]);

// Every address below is only parsed; nothing here opens a connection.
describe('callback addresses are refused when they are not publicly routable', () => {
  test.each([
    ['loopback', 'http://127.0.0.1/hook'],
    ['loopback, other address in 127/8', 'http://127.0.0.2:8080'],
    ['loopback as a decimal number', 'http://2130706433/'],
    ['loopback in hex parts', 'http://0x7f.1/'],
    ['loopback in octal', 'http://0177.0.0.1/'],
    ['IPv6 loopback', 'http://[::1]:9000/'],
    ['RFC 1918 10/8', 'https://10.1.2.3/'],
    ['RFC 1918 172.16/12', 'https://172.20.0.5/'],
    ['RFC 1918 192.168/16', 'https://192.168.1.10/'],
    ['link-local', 'http://169.254.169.254/latest/meta-data'],
    ['IPv6 link-local', 'http://[fe80::1]/'],
    ['IPv6 unique-local', 'http://[fd12:3456::1]/'],
    ['IPv4-mapped IPv6 loopback', 'http://[::ffff:127.0.0.1]/'],
    ['IPv4-mapped IPv6 private', 'http://[::ffff:10.0.0.1]/'],
    ['unspecified', 'http://0.0.0.0/'],
    ['carrier-grade NAT', 'http://100.64.0.1/'],
    ['.internal name', 'https://billing.internal/'],
    ['.local name', 'https://printer.local/'],
    ['.local name with trailing dot', 'https://printer.local./'],
    ['localhost', 'http://localhost:3000/'],
    ['localhost with two trailing dots', 'http://LocalHost..:3000/'],
    ['an empty label inside a name', 'http://billing..internal/'],
    ['IPv4-compatible IPv6 loopback', 'http://[::127.0.0.1]/'],
    ['IPv4-compatible IPv6 of a public address', 'http://[::8.8.8.8]/'],
  ])('%s: %s', (_label, url) => {
    expect(callbackUrlProblem(url, none)).toMatch(/targets|loopback|internal/);
  });

  test.each([
    ['not a URL', 'billing.example.com/hook', /absolute URL/],
    ['other scheme', 'ftp://billing.example.com/', /only http and https/],
    ['credentials in the URL', 'https://user:pass@billing.example.com/', /credentials/],
  ])('%s is refused', (_label, url, reason) => {
    expect(callbackUrlProblem(url, none)).toMatch(reason);
  });

  test('public addresses and names are allowed', () => {
    expect(callbackUrlProblem('https://billing.example.com/provisioning', none)).toBeUndefined();
    expect(callbackUrlProblem('https://93.184.216.34/', none)).toBeUndefined();
    expect(callbackUrlProblem('https://[2606:2800:220:1::1]/', none)).toBeUndefined();
  });
});

describe('Auth:AllowedInternalTargets lets named internal targets through', () => {
  const allow = parseAllowList(['billing.internal', '10.0.0.0/8', '127.0.0.1', '::1']);

  test('a listed host name, an address in a listed CIDR and a listed IP are allowed', () => {
    expect(callbackUrlProblem('https://billing.internal/', allow)).toBeUndefined();
    expect(callbackUrlProblem('https://10.20.30.40/', allow)).toBeUndefined();
    expect(callbackUrlProblem('http://127.0.0.1:7001/', allow)).toBeUndefined();
    expect(callbackUrlProblem('http://2130706433:7001/', allow)).toBeUndefined();
    expect(callbackUrlProblem('http://[::1]:7001/', allow)).toBeUndefined();
  });

  test('anything not listed is still refused', () => {
    expect(callbackUrlProblem('http://127.0.0.2/', allow)).toMatch(/loopback/);
    expect(callbackUrlProblem('https://crm.internal/', allow)).toMatch(/internal name/);
    expect(callbackUrlProblem('https://192.168.0.1/', allow)).toMatch(/private/);
  });

  test('an entry that is neither a name, an IP nor a CIDR is rejected', () => {
    expect(() => parseAllowList(['10.0.0.0/99'])).toThrow();
    expect(() => parseAllowList(['bad host!'])).toThrow();
  });
});

describe('isLoopbackAddress (the codec endpoint lets such callers in on the embedded default)', () => {
  test.each([
    ['127.0.0.1', true],
    ['127.0.0.2', true],
    ['::1', true],
    ['::ffff:127.0.0.1', true],
    ['10.0.0.1', false],
    ['::ffff:10.0.0.1', false],
    ['203.0.113.9', false],
    ['localhost', false],
    [undefined, false],
  ])('%s → %s', (address, expected) => {
    expect(isLoopbackAddress(address)).toBe(expected);
  });
});

// Robustness issue, item 16: a refusal says what an operator with an app inside their own network does about it.
test('a refusal of an internal address or name names Auth:AllowedInternalTargets and the host to list', () => {
  expect(callbackUrlProblem('http://127.0.0.1:8080/hook', none)).toBe(
    'targets 127.0.0.1, a loopback address that is not publicly routable; if the app runs inside your own network, list 127.0.0.1 in Auth:AllowedInternalTargets',
  );
  expect(callbackUrlProblem('https://billing.internal/', none)).toContain(
    'list billing.internal in Auth:AllowedInternalTargets',
  );
});
