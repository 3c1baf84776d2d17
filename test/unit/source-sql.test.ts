import { createMigrationActivities, PASS_IMPLEMENTATIONS } from '../../activities/migration';
import { PASSES } from '../../activities/migration/plan';
import { preflight, REQUIRED_TABLES } from '../../activities/migration/preflight';
import { EXPECTED_INVENTORY, validateSource } from '../../activities/migration/validation';
import { parseSourceConnectionString } from '../../migration-source/connection';
import type { SourceDatabase } from '../../migration-source/schema';
import type { Db } from '../../store/database';
import { recordingMssql } from '../support/recording-dialect';
import { testMigrationOptions } from '../support/scratch-store';

const options = testMigrationOptions({
  dryRun: true,
  migrateRefreshTokens: true,
  sourceGrantKeysAreUnhashed: true,
  pageSize: 500,
});
// No SQL Server runs here: these check the T-SQL kysely compiles for every source query of every pass.
describe('source queries compile to valid SQL Server SQL', () => {
  test.each(PASSES)('%s: keyset pages use OFFSET … FETCH NEXT, never LIMIT', async (name) => {
    // A page of users, so the user-keyed passes go on to read their child rows.
    const { db, queries } = recordingMssql<SourceDatabase>((q) =>
      q.sql.includes('from "AspNetUsers"') ? [{ Id: 'user-1' }] : [],
    );
    await PASS_IMPLEMENTATIONS[name]({ source: db, target: undefined as unknown as Db, options }, null, null);
    expect(queries.length).toBeGreaterThan(0);
    for (const q of queries) {
      expect(q.sql).not.toMatch(/\blimit\b/i);
      expect(q.sql).toMatch(/^select /);
      expect(q.sql).not.toMatch(/\$\d/);
      if (/offset/.test(q.sql)) expect(q.sql).toMatch(/order by .* offset @\d+ rows fetch next @\d+ rows only$/);
    }
  });

  test('the users page reads the ids of its partition after the cursor, then exactly the columns it needs up to its last id', async () => {
    const { db, queries } = recordingMssql<SourceDatabase>((q) =>
      q.sql.startsWith('select "Id" from "AspNetUsers"') ? [{ Id: 'user-00000043' }, { Id: 'user-00000050' }] : [],
    );
    await PASS_IMPLEMENTATIONS.users(
      { source: db, target: undefined as unknown as Db, options },
      JSON.stringify('user-00000042'),
      'user-00000500',
    );
    expect(queries[0].sql).toBe(
      'select "Id" from "AspNetUsers" where "Id" > @1 and "Id" <= @2 order by "Id" offset @3 rows fetch next @4 rows only',
    );
    expect(queries[0].parameters).toEqual(['user-00000042', 'user-00000500', 0, 500]);
    expect(queries[1].sql).toBe(
      'select "Id", "UserName", "Email", "PasswordHash", "EmailConfirmed", "TwoFactorEnabled", "LockoutEnd", "AccessFailedCount" from "AspNetUsers" where "Id" > @1 and "Id" <= @2 order by "Id" offset @3 rows fetch next @4 rows only',
    );
    expect(queries[1].parameters).toEqual(['user-00000042', 'user-00000050', 0, 500]);
    // The claim types the fold drops stay in the source.
    expect(queries[2].sql).toBe(
      'select "UserId", "ClaimType", "ClaimValue" from "AspNetUserClaims" where "ClaimType" not in (@1, @2, @3) and "UserId" > @4 and "UserId" <= @5',
    );
    expect(queries[2].parameters).toEqual([
      'email',
      'email_verified',
      'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress',
      'user-00000042',
      'user-00000050',
    ]);
  });

  test("a page's child rows are read by a UserId range: after the cursor, up to the page's last user", async () => {
    const { db, queries } = recordingMssql<SourceDatabase>((q) =>
      q.sql.includes('from "AspNetUsers"') ? [{ Id: 'user-00000043' }, { Id: 'user-00000050' }] : [],
    );
    await PASS_IMPLEMENTATIONS.logins(
      { source: db, target: undefined as unknown as Db, options },
      JSON.stringify('user-00000042'),
      null,
    );
    expect(queries[0].sql).toBe(
      'select "Id" from "AspNetUsers" where "Id" > @1 order by "Id" offset @2 rows fetch next @3 rows only',
    );
    expect(queries[1].sql).toBe(
      'select "LoginProvider", "ProviderKey", "ProviderDisplayName", "UserId" from "AspNetUserLogins" where "UserId" > @1 and "UserId" <= @2',
    );
    expect(queries[1].parameters).toEqual(['user-00000042', 'user-00000050']);
  });

  test('partition planning counts the users and finds each boundary id with OFFSET … FETCH NEXT', async () => {
    const { db, queries } = recordingMssql<SourceDatabase>((q) =>
      q.sql.includes('count(*)') ? [{ users: 9000 }] : [{ Id: `user-${String(q.parameters[0])}` }],
    );
    const partitions = await createMigrationActivities({
      target: undefined as unknown as Db,
      source: db,
    }).planUserPartitions({ partitions: 3, pageSize: 1000 });
    expect(queries.map((q) => q.sql)).toEqual([
      'select count(*) as "users" from "AspNetUsers"',
      'select "Id" from "AspNetUsers" order by "Id" offset @1 rows fetch next @2 rows only',
      'select "Id" from "AspNetUsers" order by "Id" offset @1 rows fetch next @2 rows only',
    ]);
    expect(partitions).toEqual([
      { after: null, until: 'user-2999' },
      { after: 'user-2999', until: 'user-5999' },
      { after: 'user-5999', until: null },
    ]);
  });

  test('validation reads INFORMATION_SCHEMA and groups duplicate e-mails', async () => {
    const { db, queries } = recordingMssql<SourceDatabase>((q) =>
      q.sql.includes('INFORMATION_SCHEMA') ? [{ table_name: 'AspNetUsers', column_name: 'Id' }] : [],
    );
    const result = await validateSource(db);
    expect(queries[0].sql).toBe(
      'select TABLE_NAME as table_name, COLUMN_NAME as column_name from INFORMATION_SCHEMA.COLUMNS',
    );
    expect(queries[1].sql).toMatch(/group by "NormalizedEmail" having count\(\*\) > @1/);
    expect(result.inventory.find((t) => t.table === 'AspNetUsers')!.missingColumns).toContain('PasswordHash');
    expect(result.inventory.find((t) => t.table === 'Clients')!.found).toBe(false);
  });

  test('the pre-flight check reads INFORMATION_SCHEMA and probes for MFA rows with OFFSET … FETCH NEXT, never LIMIT', async () => {
    const identity = REQUIRED_TABLES;
    const { db, queries } = recordingMssql<SourceDatabase>((q) =>
      q.sql.includes('INFORMATION_SCHEMA')
        ? identity.flatMap((table) =>
            EXPECTED_INVENTORY[table].map((column) => ({ table_name: table, column_name: column })),
          )
        : [{ UserId: 'user-1' }],
    );
    const result = await preflight(db, { ...options, dryRun: false, migrateClients: false }, false);
    expect(result.fatal).toMatch(/MFA credentials/);
    expect(result.skipped.map((s) => s.pass)).toEqual(['scopes', 'saml-providers', 'oidc-providers', 'refresh-tokens']);
    const probe = queries.find((q) => q.sql.includes('"AspNetUserTokens"'))!;
    expect(probe.sql).not.toMatch(/\blimit\b/i);
    expect(probe.sql).toMatch(/order by .* offset @\d+ rows fetch next @\d+ rows only$/);
  });
});

describe('source connection strings', () => {
  test('ADO.NET SQL Server form', () => {
    expect(
      parseSourceConnectionString(
        'Server=sql.example.com,1444;Database=IdentityServer;User Id=migrator;Password=p@ss;TrustServerCertificate=True',
      ),
    ).toEqual({
      kind: 'sqlserver',
      sqlServer: {
        server: 'sql.example.com',
        port: 1444,
        database: 'IdentityServer',
        user: 'migrator',
        password: 'p@ss',
        encrypt: true,
        trustServerCertificate: true,
      },
    });
    expect(
      parseSourceConnectionString('Data Source=tcp:db;Initial Catalog=Ids;UID=u;PWD=p;Encrypt=False').sqlServer,
    ).toMatchObject({ server: 'db', port: 1433, database: 'Ids', encrypt: false });
  });

  test('Npgsql form and URLs are PostgreSQL', () => {
    expect(parseSourceConnectionString('Host=pg.example.com;Port=5433;Database=ids;Username=u;Password=p w').url).toBe(
      'postgres://u:p%20w@pg.example.com:5433/ids',
    );
    expect(parseSourceConnectionString('postgresql://u@h/db')).toEqual({
      kind: 'postgres',
      url: 'postgresql://u@h/db',
    });
  });

  test('anything else is refused without repeating the string', () => {
    expect(() => parseSourceConnectionString('secret-password-here')).toThrow(/neither/);
    try {
      parseSourceConnectionString('secret-password-here');
    } catch (error) {
      expect((error as Error).message).not.toContain('secret-password-here');
    }
  });
});
