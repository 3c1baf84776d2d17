import { generateKeyPairSync } from 'node:crypto';
import * as sweeps from '../../migration/runner/schedule';
import { importSigningKey, loadSigningKeys } from '../../platform/store/signing-keys';
import { eventually, useHarness } from '../support/harness';
import { useGeneratedSource } from '../support/scratch-store';
import { markerOf } from '../support/rows';

const source = useGeneratedSource(200);
const h = useHarness(() => ({ apps: {}, migrationSource: source().url }));

describe('scheduled delta sweeps', () => {
  afterAll(async () => {
    await sweeps.deleteSweepSchedule(h.client).catch(() => undefined);
  });

  test('a schedule runs CreateOnly sweeps under a fresh version; it can be listed, paused, resumed and deleted', async () => {
    await sweeps.createSweepSchedule(h.client, h.config, { every: '1h' });
    const listed = await sweeps.describeSweepSchedule(h.client);
    expect(listed).toMatchObject({ id: sweeps.SWEEP_SCHEDULE_ID, paused: false });

    await h.client.schedule.getHandle(sweeps.SWEEP_SCHEDULE_ID).trigger();
    const sweep = await eventually(async () => {
      const described = await sweeps.describeSweepSchedule(h.client);
      expect(described!.recentRuns.length).toBeGreaterThan(0);
      return described!.recentRuns[0];
    }, 30_000);
    const report = await h.client.workflow.getHandle(sweep.workflowId).result();
    expect(report.version).toMatch(/^sweep-\d{8}-\d{6}/);
    expect(report.state).toBe('Completed');
    expect(report.passes.find((p: { pass: string }) => p.pass === 'users').created).toBe(200 - 0 + 2);
    const marker = await markerOf(h.context.db, report.version);
    expect(marker).toMatchObject({ state: 'Completed', dry_run: false });

    await sweeps.setSweepSchedulePaused(h.client, true);
    expect((await sweeps.describeSweepSchedule(h.client))!.paused).toBe(true);
    await sweeps.setSweepSchedulePaused(h.client, false);
    expect((await sweeps.describeSweepSchedule(h.client))!.paused).toBe(false);
    await sweeps.deleteSweepSchedule(h.client);
    expect(await sweeps.describeSweepSchedule(h.client)).toBeUndefined();
  }, 120_000);
});

describe('signing-key import for cutover', () => {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });

  test('a PEM key is imported once under its RFC 7638 thumbprint; a second import changes nothing', async () => {
    const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const first = await importSigningKey(h.context.db, h.context.dataProtection!, pem);
    expect(first.imported).toBe(true);
    expect(first.kid).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await importSigningKey(h.context.db, h.context.dataProtection!, pem)).toEqual({
      kid: first.kid,
      alg: 'RS256',
      imported: false,
    });
    const row = await h.context.db
      .selectFrom('signing_keys')
      .selectAll()
      .where('id', '=', first.kid)
      .executeTakeFirstOrThrow();
    // The public half stays readable; the private key is sealed under the data-protection ring.
    expect(row.jwk).toEqual({ kty: 'RSA', kid: first.kid, alg: 'RS256', use: 'sig', n: expect.any(String), e: 'AQAB' });
    expect(row.sealed_private).toMatch(/^v2:test:/);
    const d = privateKey.export({ format: 'jwk' }).d!;
    expect(row.sealed_private).not.toContain(d);
    const [active] = await loadSigningKeys(h.context.db, h.context.dataProtection!);
    expect(active).toMatchObject({ kid: expect.any(String), d: expect.any(String) });
  });

  test('a JWK keeps its own kid and algorithm; an EC key signs with its curve; a key IdentityServer cannot sign with is refused', async () => {
    const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'source-key-2026', alg: 'PS256' };
    expect(await importSigningKey(h.context.db, h.context.dataProtection!, JSON.stringify(jwk))).toEqual({
      kid: 'source-key-2026',
      alg: 'PS256',
      imported: true,
    });
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey;
    const pem = ec.export({ type: 'pkcs8', format: 'pem' }).toString();
    expect(await importSigningKey(h.context.db, h.context.dataProtection!, pem)).toEqual({
      kid: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
      alg: 'ES384',
      imported: true,
    });
    const ed = generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    await expect(importSigningKey(h.context.db, h.context.dataProtection!, ed)).rejects.toThrow(/cannot sign tokens/);
    const secp256k1 = generateKeyPairSync('ec', { namedCurve: 'secp256k1' }).privateKey.export({ format: 'jwk' });
    await expect(
      importSigningKey(h.context.db, h.context.dataProtection!, JSON.stringify({ ...secp256k1, alg: 'ES256' })),
    ).rejects.toThrow(/cannot sign ES256/);
  });
});
