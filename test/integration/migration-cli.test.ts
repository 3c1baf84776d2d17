import { execFile, execFileSync } from 'node:child_process';
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client as PgClient } from 'pg';
import { createScratchDatabase, generateSource } from '../fixtures/source/generate';
import { TEST_DATA_PROTECTION_KEY } from '../support/harness';
import { TEST_ADMIN_URL } from '../support/scratch-store';

const run = promisify(execFile);
type Scratch = Awaited<ReturnType<typeof createScratchDatabase>>;

/** A generated source of `users` users and an empty target, dropped after the block that asked for them. */
function sourceAndTarget(users: number): { source: () => Scratch; target: () => Scratch; args: () => string[] } {
  let source: Scratch;
  let target: Scratch;
  beforeAll(async () => {
    [source, target] = await Promise.all([
      createScratchDatabase(TEST_ADMIN_URL, 'ips_source'),
      createScratchDatabase(TEST_ADMIN_URL, 'ips_target'),
    ]);
    await generateSource(source.url, { users });
  }, 60_000);
  afterAll(async () => {
    await source?.drop();
    await target?.drop();
  });
  return {
    source: () => source,
    target: () => target,
    /** The command-line arguments naming both databases. */
    args: () => ['--Source:ConnectionString', source.url, '--Target:ConnectionString', target.url],
  };
}

/** The command line as an operator runs it: its own Temporal dev server and worker, no TEMPORAL_ADDRESS. */
async function migrate(...args: string[]): Promise<{ code: number; out: string }> {
  return migrateWith({ DataProtection__Key: TEST_DATA_PROTECTION_KEY }, ...args);
}

async function migrateWith(
  extraEnv: Record<string, string>,
  ...args: string[]
): Promise<{ code: number; out: string }> {
  const env = { ...process.env, TEMPORAL_ADDRESS: '', DATABASE_URL: '', ...extraEnv };
  try {
    const { stdout, stderr } = await run(
      process.execPath,
      ['--import', 'tsx', join(__dirname, '..', '..', 'cli', 'migrate.ts'), ...args],
      { env, timeout: 120_000 },
    );
    return { code: 0, out: stdout + stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, out: e.stdout + e.stderr };
  }
}

describe('npm run migrate', () => {
  const databases = sourceAndTarget(300);
  test('a dry run prints the validation report and writes nothing; a real run copies; a re-run of the version is skipped', async () => {
    const base = databases.args();
    const dry = await migrate(
      ...base,
      '--DryRun',
      'true',
      '--UsersMode',
      'CreateOnly',
      '--MigrateRefreshTokens',
      'true',
    );
    expect(dry.code).toBe(0);
    expect(dry.out).toContain('migration 1 (dry run): Completed');
    // The rehearsal of the cutover: the clients that will notice, and which refresh tokens would carry over and why
    // the others would not (the fixture's live tokens hold no IdentityServer payload).
    expect(dry.out).toContain('clients: 3 ready, 0 will notice the cutover');
    expect(dry.out).toContain('refresh tokens that would carry over: 0');
    expect(dry.out).toContain('not carried over, expired: 10');
    expect(dry.out).toContain('not carried over, unknown payload version: 10');
    expect(dry.out).toMatch(/inventory: 26\/26 tables as expected/);
    // Operators issue, item 7: the rehearsal meets what the real run will (it writes nothing, so it simulates the
    // rows the real run writes first): the same skipped users, the same SSO-domain clash.
    // Its counts are the real run's, said as what it would do.
    expect(dry.out).toMatch(/users +read 304 +would create 302 +would update 0 +would skip 2/);
    const clash = 'warning: SSO domain acme.io of oidc provider oidc-globex already belongs to saml provider saml-acme';
    expect(dry.out).toContain(clash);
    expect(dry.out).not.toContain(databases.source().url);

    const real = await migrate(...base, '--DryRun', 'false');
    expect(real.code).toBe(0);
    expect(real.out).toContain('migration 1: Completed');
    expect(real.out).toMatch(/users +read 304 +created 302 +updated 0 +skipped 2/);
    expect(real.out).toContain(clash);
    const warnings = (out: string) => out.split('\n').filter((line) => line.trim().startsWith('warning: user'));
    expect(warnings(dry.out).sort()).toEqual(warnings(real.out).sort());
    // Every pass's line of counts in the final report, the dry run's in its own words.
    const countLines = (out: string) =>
      out
        .slice(out.indexOf('\nmigration 1'))
        .split('\n')
        .filter((line) => / read \d+/.test(line))
        .map((line) =>
          line.replace('would create', 'created').replace('would update', 'updated').replace('would skip', 'skipped'),
        );
    expect(countLines(dry.out).length).toBeGreaterThan(5);
    expect(countLines(dry.out)).toEqual(countLines(real.out));

    const again = await migrate(...base);
    expect(again.code).toBe(0);
    expect(again.out).toMatch(/migration 1: Skipped — version 1 completed/);
  }, 300_000);

  test('bad arguments exit non-zero with a message that names what is missing', async () => {
    const noSource = await migrate('--Target:ConnectionString', databases.target().url);
    expect(noSource.code).toBe(1);
    expect(noSource.out).toContain('set --Source:ConnectionString <SOURCE_CONNECTION_STRING>');
    const badMode = await migrate(...databases.args(), '--UsersMode', 'Sometimes');
    expect(badMode.code).toBe(1);
    expect(badMode.out).toMatch(/Migration:UsersMode/);
  }, 60_000);

  // Robustness round 3, item 11: a misspelt option was dropped in silence and the run went on without it.
  test.each([
    ['--Migration:SourceDataProtection:AplicationName', '--Migration:SourceDataProtection:ApplicationName'],
    ['--SourceDataProtection:AplicationName', '--SourceDataProtection:ApplicationName'],
    ['--DryRn', '--DryRun'],
    ['--Migration:DryRn', '--Migration:DryRun'],
  ])(
    'an unknown option %s stops the run, naming %s',
    async (option, closest) => {
      const res = await migrate(...databases.args(), option, 'x', '--DryRun', 'true');
      expect(res.code).toBe(1);
      expect(res.out).toContain(`unknown option ${option}; did you mean ${closest}?`);
      expect(res.out).not.toMatch(/dry run/);
    },
    60_000,
  );
});

describe('errors that cannot heal fail the run at once', () => {
  const databases = sourceAndTarget(20);
  const alter = async (statement: string) => {
    const pg = new PgClient({ connectionString: databases.source().url });
    await pg.connect();
    await pg.query(statement);
    await pg.end();
  };
  const base = databases.args;

  test('a stock Duende source without the SAML and OIDC provider tables: both passes skipped with a warning, dry run and run', async () => {
    await alter('drop table "SamlProviderConfigurations"; drop table "OidcProviderConfigurations"');
    const dry = await migrate(...base(), '--DryRun', 'true', '--Version', 'optional-dry');
    expect(dry.code).toBe(0);
    expect(dry.out).toContain(
      'warning: the source has no table SamlProviderConfigurations; the saml-providers pass was skipped',
    );
    const real = await migrate(...base(), '--Version', 'optional-real');
    expect(real.code).toBe(0);
    expect(real.out).toContain('migration optional-real: Completed');
    expect(real.out).toContain(
      'warning: the source has no table OidcProviderConfigurations; the oidc-providers pass was skipped',
    );
  }, 120_000);

  test('MFA in the source and no data-protection key: Failed at once, naming the key; exit 1', async () => {
    const started = Date.now();
    const res = await migrateWith({}, ...base(), '--Version', 'no-key');
    expect(res.code).toBe(1);
    expect(res.out).toMatch(
      /migration no-key: Failed — the source holds MFA credentials, and protecting them needs DataProtection:Keys/,
    );
    expect(res.out).not.toMatch(/users +read/);
    expect(Date.now() - started).toBeLessThan(60_000);
  }, 120_000);

  test('a required table missing: Failed at once, naming it; exit 1', async () => {
    await alter('drop table "AspNetUserRoles"');
    const res = await migrate(...base(), '--Version', 'required');
    expect(res.code).toBe(1);
    expect(res.out).toContain(
      'migration required: Failed — the source lacks table AspNetUserRoles, which the migration needs',
    );
  }, 120_000);
});

describe('npm run migrate -- import-signing-key', () => {
  let target: Scratch;
  const dir = mkdtempSync(join(tmpdir(), 'static-keys-'));
  beforeAll(async () => {
    target = await createScratchDatabase(TEST_ADMIN_URL, 'ips_target');
  }, 60_000);
  afterAll(() => target?.drop());
  const importKey = (...args: string[]) =>
    migrate('import-signing-key', '--Target:ConnectionString', target.url, ...args);

  test("a password-protected PFX is imported under IdentityServer's kid for it, an EC PEM as ES256; a wrong password is named", async () => {
    const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
    openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'k.pem', '-out', 'c.pem', '-subj', '/CN=OP');
    openssl('pkcs12', '-export', '-inkey', 'k.pem', '-in', 'c.pem', '-out', 'k.pfx', '-passout', 'pass:Pfx-Pa55');
    // X509SecurityKey's KeyId is the certificate's thumbprint; AddSigningCredential appends the algorithm.
    const thumbprint = new X509Certificate(readFileSync(join(dir, 'c.pem'))).fingerprint.replace(/:/g, '');
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
    writeFileSync(join(dir, 'ec.pem'), ec.export({ type: 'pkcs8', format: 'pem' }));

    const wrong = await importKey('--File', join(dir, 'k.pfx'), '--Password', 'nope');
    expect(wrong).toMatchObject({ code: 1 });
    expect(wrong.out).toContain('k.pfx cannot be imported: the PFX integrity check fails with this password');
    const pfx = await importKey('--File', join(dir, 'k.pfx'), '--Password', 'Pfx-Pa55');
    expect(pfx.out).toContain(`signing key ${thumbprint}RS256 (RS256) imported`);
    const pem = await importKey('--File', join(dir, 'ec.pem'), '--Kid', 'source-ec-1');
    expect(pem.out).toContain('signing key source-ec-1 (ES256) imported');
    expect((await importKey('--File', join(dir, 'ec.pem'), '--Kid', 'source-ec-1')).out).toContain(
      'signing key source-ec-1 was already imported',
    );

    const pg = new PgClient({ connectionString: target.url });
    await pg.connect();
    try {
      const { rows } = await pg.query(
        'select id, algorithm, origin, jwk, sealed_private from signing_keys order by id',
      );
      expect(rows.map((r) => [r.id, r.algorithm, r.origin])).toEqual([
        [`${thumbprint}RS256`, 'RS256', 'static'],
        ['source-ec-1', 'ES256', 'static'],
      ]);
      expect(rows[1].jwk).toEqual({
        kty: 'EC',
        crv: 'P-256',
        x: expect.any(String),
        y: expect.any(String),
        kid: 'source-ec-1',
        alg: 'ES256',
        use: 'sig',
      });
      expect(rows[1].sealed_private).not.toContain(ec.export({ format: 'jwk' }).d);
    } finally {
      await pg.end();
    }
  }, 120_000);
});
