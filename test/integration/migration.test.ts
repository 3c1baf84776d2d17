import { PASSES } from '../../migration/activities/plan';
import { sql } from 'kysely';
import { Client as PgClient } from 'pg';
import { base32Decode } from '../../platform/security/base32';
import type { MigrationOptions } from '../../migration/activities/types';
import { migrationOptions, startOrAttachMigration } from '../../migration/runner/control';
import { verifyAnyPassword } from '../../platform/security/password-formats';
import { unprotectSecret, unprotectText } from '../../platform/security/data-protection';
import { FIXTURE_PASSWORD } from '../fixtures/source/generate';
import type { MigrationReport } from '../../migration/workflows/migration';
import { useHarness } from '../support/harness';
import { useGeneratedSource } from '../support/scratch-store';
import { countRows, markerOf, rowsWhere } from '../support/rows';
import { counterValue } from '../support/metrics';

const USERS = 1200;
const source = useGeneratedSource(USERS);
const h = useHarness(() => ({
  apps: {},
  migrationSource: source().url,
  config: { Migration: { MapStatusEndpoint: true, PageSize: 500, Version: 'v1' } },
}));

const firstNameOf = async (id: string) =>
  (await h.context.db.selectFrom('users').select('first_name').where('id', '=', id).executeTakeFirstOrThrow())
    .first_name;

async function run(overrides: Partial<MigrationOptions>): Promise<MigrationReport> {
  const handle = await startOrAttachMigration(h.client, h.config, migrationOptions(h.config, overrides));
  return handle.result();
}

const pass = (report: MigrationReport, name: string) => report.passes.find((p) => p.pass === name)!;
const countOf = (table: Parameters<typeof countRows>[1]) => countRows(h.context.db, table);

/** Each pass's counts, for comparing a dry run with the real run after it. */
const countsOf = (report: MigrationReport) =>
  Object.fromEntries(
    report.passes.map((p) => [
      p.pass,
      {
        created: p.created,
        updated: p.updated,
        skipped: p.skipped,
        read: p.read,
        tallies: [p.refreshTokens, p.signingKeys],
      },
    ]),
  );
let dryRun: MigrationReport;

describe('dry run', () => {
  test('walks the source and reports inventory, duplicate e-mails, identifier problems and counts, writing nothing but the marker', async () => {
    const report = (dryRun = await run({ version: 'dry-1', dryRun: true }));
    expect(report.state).toBe('Completed');
    expect(report.validation!.inventory.every((t) => t.found && t.missingColumns.length === 0)).toBe(true);
    expect(report.validation!.duplicateEmailCount).toBe(2);
    expect(report.validation!.duplicateEmails.map((d) => d.email)).toEqual([
      'USER499@EXAMPLE.COM',
      'USER999@EXAMPLE.COM',
    ]);
    expect(pass(report, 'users').read).toBe(USERS + 4);
    expect(pass(report, 'users').warnings.join('\n')).toMatch(/surrounding white space/);
    expect(pass(report, 'users').warnings.join('\n')).toMatch(/longer than 256 characters/);
    expect(pass(report, 'logins').read).toBe(USERS / 4);
    // Its counts are what the real run would write (the real run below reports the same), and nothing is written.
    expect(pass(report, 'users')).toMatchObject({ created: USERS, skipped: 4 });
    expect(pass(report, 'user-roles').created).toBeGreaterThan(0);
    expect(pass(report, 'clients').created).toBeGreaterThan(0);
    expect(await countOf('users')).toBe(0);
    expect(await countOf('clients')).toBe(0);
    expect(await countOf('user_roles')).toBe(0);
    const marker = await markerOf(h.context.db, 'dry-1');
    expect(marker).toMatchObject({ state: 'Completed', dry_run: true });
  });
});

describe('a real run copies every pass of the mapping table', () => {
  let report: MigrationReport;
  beforeAll(async () => {
    report = await run({ version: 'v1' });
  }, 120_000);

  test('the dry run before it reported the same counts, pass by pass (issue 41, item 7)', () => {
    expect(countsOf(dryRun)).toEqual(countsOf(report));
  });

  test('the run completes with a Completed marker and a per-pass report', async () => {
    expect(report.state).toBe('Completed');
    const marker = await markerOf(h.context.db, 'v1');
    expect(marker).toMatchObject({ state: 'Completed', dry_run: false });
    // Every pass of the plan reports, in the plan's order.
    expect((marker.report as unknown as MigrationReport).passes.map((p) => p.pass)).toEqual(PASSES);
  });

  test('users keep their ids, fold their claims, drop e-mail claims and keep custom attributes', async () => {
    // Two duplicates of an earlier e-mail and two unusable ids are skipped; the two usable odd ids are kept verbatim.
    expect(pass(report, 'users')).toMatchObject({ read: USERS + 4, created: USERS - 2 + 2, skipped: 4 });
    // Operators see the same on the worker's /metrics (this process: the dry run read them too, and wrote nothing).
    expect(await counterValue('migration_rows_total', { pass: 'users', direction: 'written' })).toBe(USERS);
    expect(await counterValue('migration_rows_total', { pass: 'users', direction: 'read' })).toBe(2 * (USERS + 4));
    expect(pass(report, 'users').warnings.join('\n')).toMatch(
      /user user-00000500 skipped: e-mail or user name user499@example.com belongs to user user-00000499/,
    );
    const users = await h.context.db
      .selectFrom('users')
      .selectAll()
      .where('id', 'in', ['user-00000002', 'user-00000003', '00000000-0000-0000-0000-00000000c0de', 'Ünïcode-üser'])
      .orderBy('id')
      .execute();
    expect(users.map((u) => u.id)).toEqual([
      '00000000-0000-0000-0000-00000000c0de',
      'user-00000002',
      'user-00000003',
      'Ünïcode-üser',
    ]);
    const [two, three] = users.slice(1, 3);
    expect(two).toMatchObject({
      email: 'user2@example.com',
      first_name: 'Given2',
      last_name: 'Family2',
      company_name: 'Company 2',
      organization_id: 'org-2',
    });
    expect(three).toMatchObject({ first_name: 'Given3', last_name: 'Family3', organization_id: 'org-3' });
    expect(two.custom_attributes).toEqual({ department: 'dept-2' });
  });

  test('password hashes of every format are kept verbatim and verify unchanged; a null hash is accepted', async () => {
    const rows = await h.context.db
      .selectFrom('users')
      .select(['id', 'password_hash', 'password_format'])
      .where('id', 'in', [
        'user-00000006',
        'user-00000001',
        'user-00000002',
        'user-00000003',
        'user-00000004',
        'user-00000005',
      ])
      .orderBy('id')
      .execute();
    expect(rows.map((r) => r.password_format)).toEqual([
      'aspnet-v3',
      'aspnet-v3',
      'aspnet-v2',
      'bcrypt',
      null,
      'aspnet-v3',
    ]);
    for (const row of rows.filter((r) => r.password_hash)) {
      const verification = await verifyAnyPassword(FIXTURE_PASSWORD, row.password_hash!);
      expect(verification.valid).toBe(true);
      expect(verification.needsUpgrade).toBe(row.id !== 'user-00000006');
    }
  });

  test('logins, roles and role assignments are copied for the users the run created; a skipped user brings none', async () => {
    expect(await countOf('user_logins')).toBe(USERS / 4 - 2);
    // The logins of the two users skipped as duplicates are read and skipped.
    expect(pass(report, 'logins')).toMatchObject({ read: USERS / 4, created: USERS / 4 - 2, skipped: 2 });
    expect(
      await h.context.db.selectFrom('user_logins').select('user_id').where('user_id', '=', 'user-00000500').execute(),
    ).toEqual([]);
    expect(
      (await h.context.db.selectFrom('roles').select('name').orderBy('name').execute()).map((r) => r.name),
    ).toEqual(['Admin', 'Auditor', 'User']);
    expect(await countOf('user_roles')).toBe(USERS - 2);
  });

  test('MFA: TOTP secrets are protected at rest, recovery codes hashed, labels source-totp and source-rc-{n}, ids deterministic', async () => {
    const mfa = await rowsWhere(h.context.db, 'mfa_credentials', { user_id: 'user-00000005' });
    expect(mfa.map((m) => m.label).sort()).toEqual(['source-rc-1', 'source-rc-2', 'source-rc-3', 'source-totp']);
    const totp = mfa.find((m) => m.kind === 'totp')!;
    expect(totp.secret).not.toContain('JBSWY3DPEHPK3PXP');
    expect(unprotectSecret(totp.secret, h.context.dataProtection!)).toEqual(base32Decode('JBSWY3DPEHPK3PXP'));
    expect(mfa.filter((m) => m.kind === 'recovery-code').every((m) => !m.secret.includes('code-'))).toBe(true);
    expect(await countOf('mfa_credentials')).toBe((USERS / 5 - 2) * 4);
  });

  test('scopes: seeded names are skipped, claims copied, resource claims become migration-created scopes', async () => {
    const scopes = await h.context.db.selectFrom('scopes').selectAll().orderBy('name').execute();
    expect(scopes.find((s) => s.name === 'openid')!.origin).toBe('seed');
    expect(scopes.filter((s) => s.origin === 'migration').map((s) => [s.name, s.kind, s.user_claims])).toEqual([
      ['employee', 'identity', ['employee_id']],
      ['orders-api', 'resource', ['tenant', 'plan']],
      ['orders.read', 'api', ['role']],
      ['orders.write', 'api', []],
    ]);
  });

  test('clients: secrets tagged by digest length, other lengths dropped with a warning, expired skipped; API resources become clients', async () => {
    const clients = await h.context.db.selectFrom('clients').selectAll().orderBy('client_id').execute();
    expect(clients.map((c) => c.client_id)).toEqual(['machine', 'mobile', 'orders-api', 'web']);
    expect(clients.find((c) => c.client_id === 'orders-api')!.allowed_scopes).toEqual(['orders.read', 'orders.write']);
    const secrets = await rowsWhere(h.context.db, 'client_secrets', { client_id: 'web' });
    expect(secrets.map((s) => s.value.split('$')[0]).sort()).toEqual(['SHA256', 'SHA512']);
    expect(pass(report, 'clients').warnings.join('\n')).toMatch(
      /a secret of client web is not a SHA-256 or SHA-512 digest and was dropped/,
    );
    expect(await countOf('client_secrets')).toBe(3 * 2 + 1);
    // The cutover report counts the clients by whether they will notice: the fixture's use only what is served.
    expect(pass(report, 'clients').readiness).toEqual({ ready: 3, willNotice: 0 });
  });

  test('SAML and OIDC providers get one SSO domain record per allowed domain', async () => {
    const domains = await h.context.db.selectFrom('sso_domains').selectAll().orderBy('domain').execute();
    expect(domains.map((d) => [d.domain, d.provider_kind, d.provider_id])).toEqual([
      ['acme.example', 'saml', 'saml-acme'],
      ['acme.example.org', 'saml', 'saml-acme'],
      ['acme.io', 'saml', 'saml-acme'],
      ['globex.example', 'oidc', 'oidc-globex'],
    ]);
    expect(pass(report, 'oidc-providers').warnings.join('\n')).toMatch(
      /acme.io of oidc provider oidc-globex already belongs to saml provider saml-acme/,
    );
    // The OIDC provider's client secret is sealed at rest.
    const [globex] = await rowsWhere(h.context.db, 'oidc_providers', { id: 'oidc-globex' });
    expect(globex.client_secret_sealed).toBe(true);
    expect(globex.client_secret).not.toContain('oidc-secret');
    expect(unprotectText(globex.client_secret!, h.context.dataProtection!)).toBe('oidc-secret');
  });

  test('refresh tokens are skipped with a warning unless MigrateRefreshTokens is set', async () => {
    expect(await countOf('grants')).toBe(0);
    expect(pass(report, 'refresh-tokens').warnings.join('\n')).toMatch(/users log in again/);
  });

  test('the status endpoint shows the marker to IdentityAdmin only; anyone else gets the same 404 as when unmapped', async () => {
    const status = await h.admin('GET', '/admin/migration/status');
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({ version: 'v1', state: 'Completed', dryRun: false, runningPasses: [] });
    expect(status.body.progress.passes.users).toEqual({
      read: USERS + 4,
      created: USERS,
      updated: 0,
      skipped: 4,
      done: true,
    });
    expect(status.body.report.passes).toHaveLength(PASSES.length);
    const refused = await h.request('GET', '/admin/migration/status');
    const unknown = await h.request('GET', '/admin/no-such-thing');
    expect(refused.status).toBe(404);
    expect(refused.body.title).toBe(unknown.body.title);
  });

  test('re-running a completed version is skipped; a new version is an idempotent delta sweep that duplicates nothing', async () => {
    const before = await Promise.all(
      (
        ['users', 'user_logins', 'user_roles', 'mfa_credentials', 'clients', 'client_secrets', 'sso_domains'] as const
      ).map(countOf),
    );
    const again = await run({ version: 'v1' });
    expect(again.state).toBe('Skipped');
    const sweep = await run({ version: 'v2' });
    expect(sweep.state).toBe('Completed');
    expect(sweep.passes.every((p) => p.created === 0)).toBe(true);
    const after = await Promise.all(
      (
        ['users', 'user_logins', 'user_roles', 'mfa_credentials', 'clients', 'client_secrets', 'sso_domains'] as const
      ).map(countOf),
    );
    expect(after).toEqual(before);
  }, 120_000);

  test('a delta sweep picks up users registered in the source since; Upsert overwrites existing users and says whose password it overwrote', async () => {
    const src = new PgClient({ connectionString: source().url });
    await src.connect();
    await src.query(
      `insert into "AspNetUsers" ("Id","UserName","NormalizedUserName","Email","NormalizedEmail","EmailConfirmed","PhoneNumberConfirmed","TwoFactorEnabled","LockoutEnabled","AccessFailedCount") values ('late-user','late@example.com','LATE@EXAMPLE.COM','late@example.com','LATE@EXAMPLE.COM',true,false,false,false,0)`,
    );
    await src.query(
      `update "AspNetUserClaims" set "ClaimValue" = 'Renamed' where "UserId" = 'user-00000002' and "ClaimType" = 'given_name'`,
    );
    await src.end();
    const sweep = await run({ version: 'v3' });
    expect(pass(sweep, 'users').created).toBe(1);
    expect(await firstNameOf('user-00000002')).toBe('Given2');
    // A migrated user whose password was re-hashed here at a sign-in: Upsert writes the source's hash over it (the
    // spec: never use Upsert after cutover), and says so, its dry run before it.
    const passwordOf = async (id: string) =>
      (await h.context.db.selectFrom('users').select('password_hash').where('id', '=', id).executeTakeFirstOrThrow())
        .password_hash;
    const sourceHash = await passwordOf('user-00000003');
    await h.context.db
      .updateTable('users')
      .set({ password_hash: 'rehashed-here', password_format: 'native' })
      .where('id', '=', 'user-00000003')
      .execute();
    const overwritten = (report: MigrationReport) =>
      pass(report, 'users').warnings.filter((w) => w.includes('whose password changed here'));
    const dry = await run({ version: 'v4-dry', usersMode: 'Upsert', dryRun: true });
    expect(overwritten(dry)).toEqual([
      "1 user(s) whose password changed here since they were migrated (re-hashed at sign-in, reset or changed) would have it overwritten with the source's: UsersMode Upsert; use CreateOnly after cutover",
    ]);
    expect(await passwordOf('user-00000003')).toBe('rehashed-here');
    const upsert = await run({ version: 'v4', usersMode: 'Upsert' });
    expect(pass(upsert, 'users').updated).toBe(USERS - 2 + 2 + 1);
    expect(await firstNameOf('user-00000002')).toBe('Renamed');
    expect(overwritten(upsert)).toEqual([expect.stringMatching(/^1 user\(s\) whose password changed here .* had it/)]);
    expect(await passwordOf('user-00000003')).toBe(sourceHash);
  }, 120_000);

  test('deleting a migrated user through the admin API deletes its logins, role links and MFA credentials', async () => {
    const id = 'user-00000020';
    const children = () =>
      Promise.all(
        (['user_logins', 'user_roles', 'mfa_credentials'] as const).map(
          async (table) =>
            (await h.context.db.selectFrom(table).select('user_id').where('user_id', '=', id).execute()).length,
        ),
      );
    const [logins, roles, mfa] = await children();
    expect(logins).toBeGreaterThan(0);
    expect(roles).toBeGreaterThan(0);
    expect(mfa).toBeGreaterThan(0);
    expect((await h.admin('DELETE', `/api/v1/profile/${id}`)).status).toBe(204);
    expect(await children()).toEqual([0, 0, 0]);
  });

  test('refresh tokens are copied when MigrateRefreshTokens and SourceGrantKeysAreUnhashed are both true', async () => {
    const withGrants = await run({ version: 'v5', migrateRefreshTokens: true, sourceGrantKeysAreUnhashed: true });
    expect(pass(withGrants, 'refresh-tokens').created).toBe(10);
    expect(pass(withGrants, 'refresh-tokens').refreshTokens).toEqual({ carriedOver: 10, notCarried: { expired: 10 } });
    const keys = await sql<{ key: string }>`select key from grants order by key limit 1`.execute(h.context.db);
    expect(keys.rows[0].key).toMatch(/^handle-/);
  }, 120_000);
});
