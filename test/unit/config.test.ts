import { ConfigError, loadConfig } from '../../platform/config/load';

const app = { CallbackUrl: 'https://crm.example.com/provisioning', ApiKey: 'secret-key' };

describe('configuration: appsettings, Section__Key environment variables, --Section:Key flags', () => {
  test('defaults apply: TryTimeoutSeconds 60, port 5000, task queue provisioning', () => {
    const config = loadConfig({ base: { ProvisioningApps: { crm: app } }, env: {}, argv: [] });
    expect(config.ProvisioningApps.crm.TryTimeoutSeconds).toBe(60);
    expect(config.Api.Port).toBe(5000);
    expect(config.Temporal.TaskQueue).toBe('provisioning');
  });

  test('environment overrides the file and flags override the environment, keys matched case-insensitively', () => {
    const config = loadConfig({
      base: { ProvisioningApps: { crm: app } },
      env: {
        ProvisioningApps__crm__TryTimeoutSeconds: '30',
        Auth__AllowedInternalTargets__0: 'crm.internal',
        Auth__AdminApiKeys__0: 'k1',
        PORT: '6000',
      },
      argv: ['--provisioningapps:crm:TryTimeoutSeconds', '15', '--Auth:AdminApiKeys:1=k2'],
    });
    expect(config.ProvisioningApps.crm.TryTimeoutSeconds).toBe(15);
    expect(config.Auth.AllowedInternalTargets).toEqual(['crm.internal']);
    expect(config.Auth.AdminApiKeys).toEqual(['k1', 'k2']);
    expect(config.Api.Port).toBe(6000);
  });

  test('a refused CallbackUrl stops start-up with a message naming the key and the reason', () => {
    const load = () =>
      loadConfig({ base: { ProvisioningApps: { crm: { ...app, CallbackUrl: 'http://0x7f.1/' } } }, env: {}, argv: [] });
    expect(load).toThrow(ConfigError);
    expect(load).toThrow(/ProvisioningApps:crm:CallbackUrl: refused: targets 127\.0\.0\.1, a loopback address/);
  });

  test('Api:TrustedProxies takes addresses and CIDRs (none by default) and names an entry that is neither', () => {
    expect(loadConfig({ base: {}, env: {}, argv: [] }).Api.TrustedProxies).toEqual([]);
    const config = loadConfig({ base: {}, env: { Api__TrustedProxies: '10.0.0.5, 10.1.0.0/16,::1' }, argv: [] });
    expect(config.Api.TrustedProxies).toEqual(['10.0.0.5', '10.1.0.0/16', '::1']);
    expect(() => loadConfig({ base: {}, env: { Api__TrustedProxies__0: 'proxy.internal' }, argv: [] })).toThrow(
      /Api:TrustedProxies:0.*must be an IP address or a CIDR range/,
    );
  });

  test('a bad value names its key', () => {
    expect(() =>
      loadConfig({ base: { ProvisioningApps: { crm: { ...app, TryTimeoutSeconds: 'soon' } } }, env: {}, argv: [] }),
    ).toThrow(/ProvisioningApps:crm:TryTimeoutSeconds/);
    expect(() =>
      loadConfig({ base: { ProvisioningApps: { crm: { CallbackUrl: app.CallbackUrl } } }, env: {}, argv: [] }),
    ).toThrow(/ProvisioningApps:crm:ApiKey/);
    expect(() => loadConfig({ base: {}, env: { Auth__AllowedInternalTargets__0: '10.0.0.0/99' }, argv: [] })).toThrow(
      /Auth:AllowedInternalTargets:0/,
    );
  });

  test('migration pages hold 10,000 users and two key ranges run side by side unless configured; out-of-range values name their key', () => {
    expect(loadConfig({ base: {}, env: {}, argv: [] }).Migration).toMatchObject({ PageSize: 10000, Parallelism: 2 });
    expect(
      loadConfig({ base: {}, env: { Migration__Parallelism: '8' }, argv: ['--Migration:PageSize', '500'] }).Migration,
    ).toMatchObject({ PageSize: 500, Parallelism: 8 });
    expect(() => loadConfig({ base: {}, env: {}, argv: ['--Migration:PageSize', '20000'] })).toThrow(
      /Migration:PageSize/,
    );
    expect(() => loadConfig({ base: {}, env: { Migration__Parallelism: '0' }, argv: [] })).toThrow(
      /Migration:Parallelism/,
    );
  });

  test('a missing APPSETTINGS file and invalid JSON are reported', () => {
    expect(() => loadConfig({ env: { APPSETTINGS: '/nonexistent/appsettings.json' }, argv: [] })).toThrow(
      /does not exist/,
    );
  });

  test('the error message never contains an ApiKey', () => {
    try {
      loadConfig({
        base: { ProvisioningApps: { crm: { ...app, CallbackUrl: 'http://10.0.0.1/' } } },
        env: {},
        argv: [],
      });
      throw new Error('expected a ConfigError');
    } catch (error) {
      expect((error as Error).message).not.toContain('secret-key');
    }
  });
});
