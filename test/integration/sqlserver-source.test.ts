import { migrationOptions, startOrAttachMigration } from '../../migration/runner/control';
import { PASSES } from '../../migration/activities/plan';
import { startHarness, type Harness } from '../support/harness';

/**
 * Runs only where a real SQL Server with an IdentityServer / ASP.NET Identity database is reachable:
 * MSSQL_TEST_CONNECTION_STRING="Server=…;Database=…;User Id=…;Password=…;TrustServerCertificate=True".
 * None can run on the machine this project is developed on; there the T-SQL is checked by test/unit/source-sql.test.ts.
 */
const connectionString = process.env.MSSQL_TEST_CONNECTION_STRING;
const describeWithSqlServer = connectionString ? describe : describe.skip;

describeWithSqlServer('a real SQL Server source', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ apps: {}, migrationSource: connectionString });
  });
  afterAll(() => h?.stop());

  test('a dry run finds the EF Core tables and walks every pass without writing', async () => {
    const handle = await startOrAttachMigration(
      h.client,
      h.config,
      migrationOptions(h.config, { version: `mssql-${Date.now()}`, dryRun: true }),
    );
    const report = await handle.result();
    expect(report.state).toBe('Completed');
    expect(
      report
        .validation!.inventory.filter((t) => t.table.startsWith('AspNet'))
        .every((t) => t.found && t.missingColumns.length === 0),
    ).toBe(true);
    expect(report.passes).toHaveLength(PASSES.length);
  }, 300_000);
});
