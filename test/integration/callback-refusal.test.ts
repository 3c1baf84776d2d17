import dns from 'node:dns';
import type { LookupFunction } from 'node:net';
import { createTccClient } from '../../provisioning/apps/tcc-client';
import { parseAllowList } from '../../platform/security/callback-address';
import { findUserIdByEmail } from '../../platform/store/users';
import { uniqueEmail, useHarness } from '../support/harness';

/** Test names that resolve to loopback addresses, as a DNS server under an attacker's control could answer. */
const TEST_NAMES: Record<string, string> = {
  'app-allowed.example.test': '127.0.0.1',
  'app-rebound.example.test': '127.0.0.2',
};
const testLookup = ((hostname: string, options: dns.LookupOptions, callback: (...args: unknown[]) => void) => {
  const address = TEST_NAMES[hostname];
  if (!address) return dns.lookup(hostname, options, callback as never);
  if (options.all) return callback(null, [{ address, family: 4 }]);
  callback(null, address, 4);
}) as unknown as LookupFunction;

// Only 127.0.0.1 is on the allow-list; the "rebound" app really listens on 127.0.0.2, so a refusal is the agent's doing.
const h = useHarness({
  apps: {
    allowed: { callbackHost: 'app-allowed.example.test' },
    rebound: { listenHost: '127.0.0.2', callbackHost: 'app-rebound.example.test' },
  },
  allowedInternalTargets: ['127.0.0.1'],
  dnsLookup: testLookup,
});

describe('callback addresses are checked again at connect time, after DNS resolution', () => {
  test('a name that resolves to a loopback address outside the allow-list is refused before any request reaches it', async () => {
    const email = uniqueEmail('rebound');
    const res = await h.admin('POST', '/api/v1/profile/', { email });
    expect(res.status).toBe(422);
    expect(res.body.appId).toBe('rebound');
    expect(res.body.reason).toMatch(/127\.0\.0\.2.*not allowed/);
    expect(h.apps.rebound.state.calls).toHaveLength(0);
    expect(await findUserIdByEmail(h.context.db, email)).toBeUndefined();
    // The app that approved first is told to cancel.
    expect(h.apps.allowed.state.calls.map((c) => c.path)).toEqual(['/try', '/cancel']);
  });
});

test('a name that resolves to an IPv4-compatible IPv6 address is refused at connect time', async () => {
  const lookup = ((_hostname: string, options: dns.LookupOptions, callback: (...args: unknown[]) => void) => {
    if (options.all) return callback(null, [{ address: '::7f00:1', family: 6 }]);
    callback(null, '::7f00:1', 6);
  }) as unknown as LookupFunction;
  const client = createTccClient(parseAllowList([]), { dnsLookup: lookup });
  try {
    const app = {
      appId: 'compat',
      callbackUrl: 'http://app-compat.example.test:9/',
      apiKey: 'k',
      tryTimeoutSeconds: 5,
    };
    const verdict = await client.try(app, { transactionId: 't', userId: 'u', email: 'e@example.test' });
    expect(verdict).toEqual({ approved: false, reason: expect.stringMatching(/::7f00:1.*not allowed/) });
  } finally {
    client.close();
  }
});

describe('callback addresses are refused on every request, not only when written', () => {
  const client = createTccClient(parseAllowList(['127.0.0.1']));
  afterAll(() => client.close());

  // These URLs never reach a socket: the check runs before any connection is attempted.
  test.each([
    ['a private address that bypassed validation on write', 'http://10.0.0.7/hooks'],
    ['a loopback address outside the allow-list', 'http://127.0.0.3:9/'],
    ['a numeric spelling of loopback', 'http://2130706434/'],
    ['an .internal name', 'https://crm.internal/'],
    ['localhost with two trailing dots', 'http://LocalHost..:9/'],
    ['an IPv4-compatible IPv6 loopback', 'http://[::127.0.0.1]:9/'],
  ])('%s', async (_label, callbackUrl) => {
    const app = { appId: 'sneaky', callbackUrl, apiKey: 'k', tryTimeoutSeconds: 5 };
    const verdict = await client.try(app, { transactionId: 't', userId: 'u', email: 'e@example.test' });
    expect(verdict).toEqual({
      approved: false,
      reason: expect.stringMatching(/^Try to app sneaky refused: CallbackUrl targets/),
    });
    await expect(client.confirm(app, 't')).rejects.toThrow(/refused/);
    await expect(client.cancel(app, 't')).rejects.toThrow(/refused/);
    await expect(client.deleteUser(app, 'u')).rejects.toThrow(/refused/);
  });
});
