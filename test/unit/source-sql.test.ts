import { createMigrationActivities } from '../../migration/activities/migration-activities';
import { PASS_IMPLEMENTATIONS } from '../../migration/activities/passes/pass-implementations';
import { PASSES } from '../../migration/activities/plan';
import { preflight, REQUIRED_TABLES } from '../../migration/activities/preflight';
import { EXPECTED_INVENTORY, validateSource } from '../../migration/activities/validation';
import { parseSourceConnectionString } from '../../migration/source/connection';
import type { SourceDatabase } from '../../migration/source/source-schema';
import type { Db } from '../../platform/store/database';
import { recordingMssql } from '../support/recording-dialect';
import { readRefreshTokenByKeys } from '../../migration/source/configuration-reads';
import { findUserBoundsByEmail } from '../../migration/source/user-reads';
import { loadSourceKeyRing } from '../../migration/source/data-protection-keys';
import { persistedGrantKeys } from '../../platform/security/persisted-grant-keys';
import { testMigrationOptions } from '../support/scratch-store';

const options = testMigrationOptions({
  dryRun: true,
  migrateRefreshTokens: true,
  sourceGrantKeysAreUnhashed: true,
  migrateSigningKeys: true,
  pageSize: 500,
});
/** The source's Data Protection as the signing-keys pass needs it to run at all. */
const sourceDataProtection = { ApplicationName: '/srv/identity-server' };

/**
 * A target that holds nothing, as a fresh one: the dry run reads it as the real run would (tombstones, existing
 * users, holders), and every user it asks about is missing.
 */
const emptyTarget = () =>
  recordingMssql<unknown>((q) => {
    if (!q.sql.includes('from unnest')) return [];
    const ids = q.parameters[0] as string[];
    if (q.sql.includes('as u(id)')) return ids.map((id) => ({ id }));
    // usersInTarget, the real run's question: every id missing, none tombstoned.
    if (q.sql.includes('as missing'))
      return ids.map((id) => ({ id, missing: true, tombstoned: false, meets: [false] }));
    return [];
  }).db as unknown as Db;

// No SQL Server runs here: these check the T-SQL kysely compiles for every source query of every pass.
describe('source queries compile to valid SQL Server SQL', () => {
  test.each(PASSES)('%s: keyset pages use OFFSET … FETCH NEXT, never LIMIT', async (name) => {
    // A page of users, so the user-keyed passes go on to read their child rows.
    const { db, queries } = recordingMssql<SourceDatabase>((q) =>
      q.sql.includes('from "AspNetUsers"') ? [{ Id: 'user-1' }] : [],
    );
    await PASS_IMPLEMENTATIONS[name]({ source: db, target: emptyTarget(), options, sourceDataProtection }, null, null);
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
      { source: db, target: emptyTarget(), options },
      JSON.stringify('user-00000042'),
      'user-00000500',
    );
    expect(queries[0].sql).toBe(
      'select "Id" from "AspNetUsers" where "Id" > @1 and "Id" <= @2 order by "Id" offset @3 rows fetch next @4 rows only',
    );
    expect(queries[0].parameters).toEqual(['user-00000042', 'user-00000500', 0, 500]);
    expect(queries[1].sql).toBe(
      'select "Id", "UserName", "Email", "PasswordHash", "EmailConfirmed", "TwoFactorEnabled", "LockoutEnd", "AccessFailedCount", "SecurityStamp" from "AspNetUsers" where "Id" > @1 and "Id" <= @2 order by "Id" offset @3 rows fetch next @4 rows only',
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
    // A real run's page (a dry run first stands in for the users pass's writes, in a transaction this fake has not),
    // over a target that holds the page's users as this run's.
    const target = recordingMssql<unknown>((q) => (q.sql.includes('from unnest') ? [{ id: 'user-00000043' }] : []))
      .db as unknown as Db;
    await PASS_IMPLEMENTATIONS.logins(
      { source: db, target, options: { ...options, dryRun: false } },
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

  test('the read-through window and the key ring read the source with T-SQL too', async () => {
    const { db, queries } = recordingMssql<SourceDatabase>((q) =>
      q.sql.includes('INFORMATION_SCHEMA') ? [{ n: 1 }] : q.sql.includes('"NormalizedEmail"') ? [{ Id: 'user-7' }] : [],
    );
    await readRefreshTokenByKeys(db, persistedGrantKeys('ABC-1'));
    expect(await findUserBoundsByEmail(db, 'late@example.com')).toEqual({ id: 'user-7', before: null });
    await loadSourceKeyRing(db, {});
    expect(queries.map((q) => q.sql)).toEqual([
      'select "Key", "Type", "SubjectId", "SessionId", "ClientId", "Description", "CreationTime", "Expiration", "ConsumedTime", "Data" from "PersistedGrants" where "Type" = @1 and "Key" in (@2, @3)',
      'select "Id" from "AspNetUsers" where "NormalizedEmail" = @1 order by "Id" offset @2 rows fetch next @3 rows only',
      'select max("Id") as "id" from "AspNetUsers" where "Id" < @1',
      'select count(*) as n from INFORMATION_SCHEMA.COLUMNS where TABLE_NAME = @1 and COLUMN_NAME = @2',
      'select "Id", "Xml" from "DataProtectionKeys"',
    ]);
    // ASP.NET Identity's normalizer upper-cases the address.
    expect(queries[1].parameters[0]).toBe('LATE@EXAMPLE.COM');
  });
});

test("the signing-keys pass reads the Keys table's signing keys with T-SQL", async () => {
  // A key older than RotationInterval + RetentionDuration: counted as retired, so the pass never writes.
  const retired = {
    Id: 'A1B2C3',
    Version: 1,
    Created: new Date('2020-01-01T00:00:00Z'),
    Algorithm: 'RS256',
    IsX509Certificate: false,
    DataProtected: false,
    Data: '{}',
  };
  const { db, queries } = recordingMssql<SourceDatabase>((q) =>
    q.sql.includes('INFORMATION_SCHEMA') ? [{ n: 1 }] : q.sql.includes('from "Keys"') ? [retired] : [],
  );
  const page = await PASS_IMPLEMENTATIONS['signing-keys'](
    { source: db, target: undefined as unknown as Db, options, sourceDataProtection },
    null,
    null,
  );
  expect(queries.map((q) => q.sql)).toEqual([
    'select count(*) as n from INFORMATION_SCHEMA.COLUMNS where TABLE_NAME = @1 and COLUMN_NAME = @2',
    'select "Id", "Version", "Created", "Algorithm", "IsX509Certificate", "DataProtected", "Data" from "Keys" where "Use" = @1 order by "Id"',
  ]);
  expect(queries[1].parameters).toEqual(['signing']);
  expect(page.signingKeys).toEqual({ imported: 0, alreadyStored: 0, retired: 1, notImported: {} });
});

describe('source connection strings', () => {
  const sqlServer = (value: string) => parseSourceConnectionString(value).sqlServer;

  test('ADO.NET SQL Server form becomes tedious configuration', () => {
    expect(
      parseSourceConnectionString(
        'Server=sql.example.com,1444;Database=IdentityServer;User Id=migrator;Password=p@ss;TrustServerCertificate=True',
      ),
    ).toEqual({
      kind: 'sqlserver',
      sqlServer: {
        server: 'sql.example.com',
        authentication: { type: 'default', options: { userName: 'migrator', password: 'p@ss' } },
        options: { port: 1444, database: 'IdentityServer', encrypt: true, trustServerCertificate: true },
      },
    });
    expect(sqlServer('Data Source=tcp:db;Initial Catalog=Ids;UID=u;PWD=p;Encrypt=False')).toMatchObject({
      server: 'db',
      options: { port: 1433, database: 'Ids', encrypt: false, trustServerCertificate: false },
    });
  });

  test('the Azure SQL string as the portal shows it: tcp: prefix, port after a comma, every option honoured', () => {
    expect(
      sqlServer(
        'Server=tcp:ids.database.windows.net,1433;Initial Catalog=Identity;Persist Security Info=False;User ID=mig;' +
          'Password={p;w=d};MultipleActiveResultSets=False;Encrypt=True;TrustServerCertificate=False;Connection Timeout=30;',
      ),
    ).toEqual({
      server: 'ids.database.windows.net',
      authentication: { type: 'default', options: { userName: 'mig', password: 'p;w=d' } },
      options: {
        port: 1433,
        database: 'Identity',
        encrypt: true,
        trustServerCertificate: false,
        connectTimeout: 30_000,
      },
    });
  });

  test('quoted values keep their semicolons and equals signs', () => {
    expect(sqlServer('Server=db;Database=Ids;User Id=u;Password="a;b=c";')!.authentication).toEqual({
      type: 'default',
      options: { userName: 'u', password: 'a;b=c' },
    });
  });

  test('a named instance is reached through its instance name, not a port; (local) and . are this machine', () => {
    expect(sqlServer('Server=db01\\SQLEXPRESS;Database=Ids;User Id=u;Password=p')).toMatchObject({
      server: 'db01',
      options: { instanceName: 'SQLEXPRESS', database: 'Ids' },
    });
    expect(sqlServer('Server=db01\\SQLEXPRESS;Database=Ids;User Id=u;Password=p')!.options).not.toHaveProperty('port');
    expect(sqlServer('Server=(local);Database=Ids;User Id=u;Password=p')!.server).toBe('localhost');
    expect(sqlServer('Server=.\\SQLEXPRESS;Database=Ids;User Id=u;Password=p')).toMatchObject({
      server: 'localhost',
      options: { instanceName: 'SQLEXPRESS' },
    });
  });

  test('Encrypt=Strict (TDS 8) is kept as strict; Application Name, ApplicationIntent and MultiSubnetFailover pass on', () => {
    expect(
      sqlServer(
        'Server=db;Database=Ids;User Id=u;Password=p;Encrypt=Strict;Application Name=migration;ApplicationIntent=ReadOnly;MultiSubnetFailover=True',
      )!.options,
    ).toMatchObject({ encrypt: 'strict', appName: 'migration', readOnlyIntent: true, multiSubnetFailover: true });
  });

  test('Azure SQL authentication modes that tedious supports', () => {
    expect(
      sqlServer('Server=tcp:ids.database.windows.net;Database=Ids;Authentication=Active Directory Default')!
        .authentication,
    ).toEqual({ type: 'azure-active-directory-default', options: {} });
    expect(
      sqlServer(
        'Server=ids.database.windows.net;Database=Ids;Authentication="Active Directory Managed Identity";User Id=mi-client',
      )!.authentication,
    ).toEqual({ type: 'azure-active-directory-msi-vm', options: { clientId: 'mi-client' } });
    expect(
      sqlServer(
        'Server=ids.database.windows.net;Database=Ids;Authentication=Active Directory Service Principal;User Id=app-id;Password=app-secret;Tenant Id=tenant-1',
      )!.authentication,
    ).toEqual({
      type: 'azure-active-directory-service-principal-secret',
      options: { clientId: 'app-id', clientSecret: 'app-secret', tenantId: 'tenant-1' },
    });
  });

  test('what cannot be honoured is refused by name, without repeating the string', () => {
    const refusals: Array<[string, RegExp]> = [
      [
        'Server=db;Database=Ids;Integrated Security=SSPI',
        /integrated security is not supported: Windows authentication/,
      ],
      ['Server=db;Database=Ids;Trusted_Connection=True', /trusted_connection is not supported/],
      [
        'Server=db;Database=Ids;User Id=u;Password=p;Authentication=Active Directory Interactive',
        /Authentication=Active Directory Interactive is not supported/,
      ],
      [
        'Server=db;Database=Ids;User Id=u;Password=secret-1;Authentication=Active Directory Service Principal',
        /needs Tenant Id/,
      ],
      ['Server=np:\\\\db\\pipe\\sql\\query;Database=Ids;User Id=u;Password=secret-1', /only TCP connections/],
      [
        'Server=db;AttachDbFilename=|DataDirectory|ids.mdf;User Id=u;Password=secret-1',
        /attachdbfilename is not supported/,
      ],
    ];
    for (const [value, message] of refusals) {
      expect(() => parseSourceConnectionString(value)).toThrow(message);
      expect(() => parseSourceConnectionString(value)).not.toThrow(/secret-1/);
    }
    // Switched off, those keywords are no obstacle.
    expect(sqlServer('Server=db;Database=Ids;User Id=u;Password=p;Integrated Security=False')!.server).toBe('db');
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
