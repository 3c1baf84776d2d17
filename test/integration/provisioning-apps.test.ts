import type { AppProvider } from '../../provisioning/apps/app-providers';
import { createConfigAppProvider } from '../../provisioning/apps/app-providers';
import { randomBytes, randomUUID } from 'node:crypto';
import { createServiceContext } from '../../composition/service-context';
import { createKeyRing } from '../../platform/security/data-protection';
import { findStoredApp, insertStoredApp } from '../../provisioning/store/provisioning-apps';
import { startDownstreamApp, type RunningDownstreamApp } from '../../examples/downstream-app/app';
import { startHarness, uniqueEmail, type Harness } from '../support/harness';
import { storedAppRow } from '../support/rows';
import { provisioningWorkflowId } from '../../provisioning/workflows/ids';
import { counterValue } from '../support/metrics';

describe('with the configuration-backed provider (the default)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ apps: { crm: {} } });
  });
  afterAll(() => h?.stop());

  // Operators issue, item 10: /docs lists the routes, so their 404 says which setting brings them.
  test('the app management routes answer 404 naming the setting that brings them, behind the admin key', async () => {
    const answers = [
      await h.admin('GET', '/api/v1/provisioning/apps'),
      await h.admin('POST', '/api/v1/provisioning/apps', {
        appId: 'x',
        CallbackUrl: 'https://x.example.com',
        ApiKey: 'k',
      }),
      await h.admin('DELETE', '/api/v1/provisioning/apps/crm'),
      await h.admin('POST', '/api/v1/provisioning/apps/crm/test'),
    ];
    for (const res of answers) {
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ status: 404, title: 'Not available in this configuration' });
      expect(res.body.detail).toContain('Provisioning:AppProvider: "Store"');
      expect(res.body.detail).toContain('ProvisioningApps');
    }
    // Without the admin key, the guard answers first: nothing of the configuration is told.
    const anonymous = await h.request('POST', '/api/v1/provisioning/apps', {});
    expect(anonymous.status).toBe(401);
  });
});

describe('with the store-backed provider (Provisioning:AppProvider = Store)', () => {
  let h: Harness;
  let outside: RunningDownstreamApp;
  const key = (appId: string) => h.config.ProvisioningApps[appId].ApiKey;
  const registration = (appId: string) => ({ CallbackUrl: h.apps[appId].url, ApiKey: key(appId) });
  const register = (appId: string, extra: Record<string, unknown> = {}) =>
    h.admin('POST', '/api/v1/provisioning/apps', { appId, ...registration(appId), ...extra });

  beforeAll(async () => {
    h = await startHarness({ apps: { crm: {}, billing: {} }, config: { Provisioning: { AppProvider: 'Store' } } });
    // Listens on a loopback address that is not on the allow-list.
    outside = await startDownstreamApp({ apiKey: 'outside', host: '127.0.0.2' });
  });
  afterAll(async () => {
    await outside?.close();
    await h?.stop();
  });
  beforeEach(() => {
    for (const app of Object.values(h.apps)) app.state.behaviour = {};
  });

  test('apps are created, read, listed, replaced and deleted at run time; ApiKey is never returned', async () => {
    const created = await register('crm');
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ appId: 'crm', CallbackUrl: h.apps.crm.url, TryTimeoutSeconds: 60 });
    expect(created.headers.get('location')).toBe('/api/v1/provisioning/apps/crm');
    expect((await register('crm')).status).toBe(409);

    // camelCase is accepted too.
    const camel = await h.admin('POST', '/api/v1/provisioning/apps', {
      appId: 'billing',
      callbackUrl: h.apps.billing.url,
      apiKey: key('billing'),
      tryTimeoutSeconds: 5,
    });
    expect(camel).toMatchObject({ status: 201, body: { TryTimeoutSeconds: 5 } });

    const list = await h.admin('GET', '/api/v1/provisioning/apps');
    expect(list.body.map((a: { appId: string }) => a.appId)).toEqual(['crm', 'billing']);
    expect(JSON.stringify(list.body)).not.toContain(key('crm'));
    expect(JSON.stringify((await h.admin('GET', '/api/v1/provisioning/apps/crm')).body)).not.toContain(key('crm'));

    const replaced = await h.admin('PUT', '/api/v1/provisioning/apps/billing', {
      CallbackUrl: h.apps.billing.url,
      ApiKey: key('billing'),
      TryTimeoutSeconds: 7,
    });
    expect(replaced).toMatchObject({ status: 200, body: { TryTimeoutSeconds: 7 } });
    expect(
      (await h.admin('PUT', '/api/v1/provisioning/apps/nope', { CallbackUrl: h.apps.billing.url, ApiKey: 'k' })).status,
    ).toBe(404);
  });

  // Pentest (sign-in security, item 16): deleting an app a client lists was accepted, and then every sign-in through
  // that client was refused.
  test('deleting an app that a client lists answers 409 naming the client; once no client lists it, it goes', async () => {
    const suffix = randomUUID().slice(0, 8);
    const appId = `listed-${suffix}`;
    const clientId = `lists-app-${suffix}`;
    expect(
      (await h.admin('POST', '/api/v1/provisioning/apps', { appId, CallbackUrl: h.apps.crm.url, ApiKey: key('crm') }))
        .status,
    ).toBe(201);
    const client = (provisioningApps: string[]) =>
      h.admin('PUT', `/api/v1/clients/${clientId}`, {
        AllowedGrantTypes: ['authorization_code'],
        RedirectUris: ['https://lists.example.com/cb'],
        AllowedScopes: ['openid'],
        RequireClientSecret: false,
        ProvisioningApps: provisioningApps,
      });
    expect((await client([appId])).status).toBe(201);
    const refused = await h.admin('DELETE', `/api/v1/provisioning/apps/${appId}`);
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toContain(`clients ${clientId} list app ${appId}`);
    expect((await h.admin('GET', `/api/v1/provisioning/apps/${appId}`)).status).toBe(200);

    expect((await client([])).status).toBe(200);
    expect((await h.admin('DELETE', `/api/v1/provisioning/apps/${appId}`)).status).toBe(204);
    await h.admin('DELETE', `/api/v1/clients/${clientId}`);
  });

  test('changes apply to the next provisioning without a restart', async () => {
    const before = await h.admin('POST', '/api/v1/profile/', { email: uniqueEmail('store-before') });
    expect(before.body.provisionedApps).toEqual(['billing', 'crm']);
    expect((await h.admin('DELETE', '/api/v1/provisioning/apps/billing')).status).toBe(204);
    expect((await h.admin('DELETE', '/api/v1/provisioning/apps/billing')).status).toBe(404);
    const after = await h.admin('POST', '/api/v1/profile/', { email: uniqueEmail('store-after') });
    expect(after.status).toBe(201);
    expect(after.body.provisionedApps).toEqual(['crm']);
    expect(h.apps.billing.state.calls.some((c) => (c.body as { userId?: string })?.userId === after.body.userId)).toBe(
      false,
    );
    expect((await register('billing')).status).toBe(201);
  });

  test("an app with an hour's Try timeout is asked like any other: a step per app and phase, and still provisioned", async () => {
    /** The markers of a creation's history by name: a workflow step (local activity) or a patch checked each has one. */
    const markersOf = async (userId: string, name: 'core_local_activity' | 'core_patch') => {
      const history = await h.client.workflow.getHandle(provisioningWorkflowId(userId)).fetchHistory();
      return history.events!.filter((e) => e.markerRecordedEventAttributes?.markerName === name).length;
    };
    const stepsOf = (userId: string) => markersOf(userId, 'core_local_activity');
    const setCrmTimeout = async (seconds: number) =>
      expect(
        (await h.admin('PUT', '/api/v1/provisioning/apps/crm', { ...registration('crm'), TryTimeoutSeconds: seconds }))
          .status,
      ).toBe(200);
    // The user and its apps, a Try and a Confirm per app, the records.
    const steps = 1 + 2 * 2 + 1;

    const usual = await h.admin('POST', '/api/v1/profile/', { email: uniqueEmail('usual') });
    expect(usual.body.provisionedApps).toEqual(['billing', 'crm']);
    expect(await stepsOf(usual.body.userId)).toBe(steps);
    // No patch: workers drain before an upgrade until the first release (docs/design.md), and each patch checked would
    // cost two events and a visibility write.
    expect(await markersOf(usual.body.userId, 'core_patch')).toBe(0);

    // Only crm's Try step is limited by crm's hour; nothing else of the attempt waits on it.
    await setCrmTimeout(3600);
    try {
      const slow = await h.admin('POST', '/api/v1/profile/', { email: uniqueEmail('slow-app') });
      expect(slow.status).toBe(201);
      expect(slow.body.provisionedApps).toEqual(['billing', 'crm']);
      expect(await stepsOf(slow.body.userId)).toBe(steps);
    } finally {
      await setCrmTimeout(60);
    }
  });

  test('a refused CallbackUrl or an invalid body answers 400 naming the reason', async () => {
    const refused = await h.admin('POST', '/api/v1/provisioning/apps', {
      appId: 'evil',
      CallbackUrl: 'http://169.254.169.254/latest',
      ApiKey: 'k',
    });
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toMatch(/^CallbackUrl: refused: targets 169\.254\.169\.254, a linkLocal address/);
    const internal = await h.admin('POST', '/api/v1/provisioning/apps', {
      appId: 'evil',
      CallbackUrl: 'https://billing.internal/',
      ApiKey: 'k',
    });
    expect(internal.body.detail).toMatch(/internal name/);
    const invalid = await h.admin('POST', '/api/v1/provisioning/apps', { appId: 'bad id!', CallbackUrl: 'nope' });
    expect(invalid.status).toBe(400);
    expect(invalid.body.detail).toMatch(/appId/);
    expect(invalid.body.detail).toMatch(/CallbackUrl/);
    expect(invalid.body.detail).toMatch(/ApiKey/);
    expect((await h.admin('GET', '/api/v1/provisioning/apps/evil')).status).toBe(404);
  });

  test('the probe sends a marked Try with a synthetic user, cancels it, and reports reachability, status, latency and the verdict', async () => {
    const res = await h.admin('POST', '/api/v1/provisioning/apps/crm/test');
    const probe = { reachable: true, status: 200, approved: true, reason: null, cancelled: true };
    expect(res).toMatchObject({ status: 200, body: { appId: 'crm', ...probe, latencyMs: expect.any(Number) } });
    expect(res.body.transactionId).toMatch(/^probe:/);
    const calls = h.apps.crm.state.calls.filter(
      (c) => (c.body as { transactionId?: string })?.transactionId === res.body.transactionId,
    );
    expect(calls.map((c) => c.path)).toEqual(['/try', '/cancel']);
    expect(calls[0].body).toMatchObject({
      email: expect.stringMatching(/@example\.invalid$/),
      firstName: 'Provisioning',
      lastName: 'Probe',
    });
    expect(h.apps.crm.state.records.has(res.body.transactionId)).toBe(false);

    h.apps.crm.state.behaviour = { rejectWith: 'probe says no' };
    const rejected = await h.admin('POST', '/api/v1/provisioning/apps/crm/test');
    expect(rejected.body).toMatchObject({
      reachable: true,
      status: 200,
      approved: false,
      reason: 'probe says no',
      cancelled: false,
    });

    h.apps.crm.state.behaviour = { tryStatus: 500 };
    expect((await h.admin('POST', '/api/v1/provisioning/apps/crm/test')).body).toMatchObject({
      reachable: true,
      status: 500,
      approved: false,
    });
    expect((await h.admin('POST', '/api/v1/provisioning/apps/nope/test')).status).toBe(404);
  });

  // Operators issue, item 10: an operator's probes are not provisioning traffic.
  test("the probe's calls are counted as probes, apart from provisioning's calls to the app", async () => {
    const provisioning = { app: 'crm' };
    const before = {
      calls: await counterValue('tcc_calls_total', provisioning),
      tries: await counterValue('tcc_probe_calls_total', { app: 'crm', phase: 'try', outcome: 'approved' }),
      cancels: await counterValue('tcc_probe_calls_total', { app: 'crm', phase: 'cancel', outcome: 'ok' }),
      rejected: await counterValue('tcc_probe_calls_total', { app: 'crm', phase: 'try', outcome: 'rejected' }),
    };
    expect((await h.admin('POST', '/api/v1/provisioning/apps/crm/test')).body).toMatchObject({ cancelled: true });
    h.apps.crm.state.behaviour = { rejectWith: 'probe says no' };
    expect((await h.admin('POST', '/api/v1/provisioning/apps/crm/test')).body).toMatchObject({ approved: false });
    expect(await counterValue('tcc_probe_calls_total', { app: 'crm', phase: 'try', outcome: 'approved' })).toBe(
      before.tries + 1,
    );
    expect(await counterValue('tcc_probe_calls_total', { app: 'crm', phase: 'cancel', outcome: 'ok' })).toBe(
      before.cancels + 1,
    );
    expect(await counterValue('tcc_probe_calls_total', { app: 'crm', phase: 'try', outcome: 'rejected' })).toBe(
      before.rejected + 1,
    );
    expect(await counterValue('tcc_calls_total', provisioning)).toBe(before.calls);
  });

  test('app keys are sealed at rest; rows stored in plaintext are sealed at the next start; a rotated ring still opens them', async () => {
    expect((await register('crm')).status).toBeLessThan(500);
    const sealed = await storedAppRow(h.context.db, 'crm');
    expect(sealed.api_key_protected).toBe(true);
    expect(sealed.api_key).toMatch(/^v2:test:/);
    expect(sealed.api_key).not.toContain(key('crm'));

    await h.context.db
      .insertInto('provisioning_apps')
      .values({
        app_id: 'plain-legacy',
        callback_url: h.apps.billing.url,
        api_key: key('billing'),
        try_timeout_seconds: 5,
      })
      .execute();
    const restarted = await createServiceContext(h.config, process.env.TEST_DATABASE_URL!);
    await restarted.close();
    const legacy = await storedAppRow(h.context.db, 'plain-legacy');
    expect(legacy.api_key_protected).toBe(true);
    expect(legacy.api_key).not.toContain(key('billing'));

    const rotated = createKeyRing([{ id: 'next', key: randomBytes(32) }, h.context.dataProtection!.primary]);
    expect((await findStoredApp(h.context.db, rotated, 'plain-legacy'))?.apiKey).toBe(key('billing'));
    expect((await h.admin('POST', '/api/v1/provisioning/apps/plain-legacy/test')).body).toMatchObject({
      reachable: true,
      approved: true,
    });
    expect((await h.admin('DELETE', '/api/v1/provisioning/apps/plain-legacy')).status).toBe(204);
  });

  test('probing an app whose address is refused answers 400 without any call', async () => {
    // Written past the API (which would refuse it) to prove the check runs again before the call.
    await insertStoredApp(h.context.db, h.context.dataProtection!, {
      appId: 'sneaky',
      callbackUrl: outside.url,
      apiKey: 'outside',
      tryTimeoutSeconds: 5,
    });
    const res = await h.admin('POST', '/api/v1/provisioning/apps/sneaky/test');
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/127\.0\.0\.2/);
    expect(outside.state.calls).toHaveLength(0);
    expect((await h.admin('DELETE', '/api/v1/provisioning/apps/sneaky')).status).toBe(204);
  });
});

describe('a custom app provider plugs in', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      apps: { crm: {}, billing: {} },
      // Per organization: users of "acme" get only crm; everyone else gets every configured app.
      appProvider: ({ config }): AppProvider => {
        const configured = createConfigAppProvider(config.ProvisioningApps);
        return {
          async listApps(scope) {
            const all = await configured.listApps(scope);
            return scope.organizationId === 'acme' ? all.filter((a) => a.appId === 'crm') : all;
          },
          getApp: (appId) => configured.getApp(appId),
        };
      },
    });
  });
  afterAll(() => h?.stop());

  test('the provider chooses the apps per organization', async () => {
    const acme = await h.admin('POST', '/api/v1/profile/', { email: uniqueEmail('acme'), organizationId: 'acme' });
    expect(acme.body.provisionedApps).toEqual(['crm']);
    const other = await h.admin('POST', '/api/v1/profile/', { email: uniqueEmail('globex'), organizationId: 'globex' });
    expect(other.body.provisionedApps).toEqual(['billing', 'crm']);
  });
});
