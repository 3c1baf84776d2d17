import { sql, type Kysely } from 'kysely';
import type { SourceDatabase } from './source-schema';

/**
 * The source's tables and their columns. Works on SQL Server and PostgreSQL alike: INFORMATION_SCHEMA, with the
 * column names aliased to one spelling.
 */
export async function readSourceColumns(source: Kysely<SourceDatabase>): Promise<Map<string, Set<string>>> {
  const columns = await sql<{
    table_name: string;
    column_name: string;
  }>`select TABLE_NAME as table_name, COLUMN_NAME as column_name from INFORMATION_SCHEMA.COLUMNS`.execute(source);
  const found = new Map<string, Set<string>>();
  for (const c of columns.rows) {
    if (!found.has(c.table_name)) found.set(c.table_name, new Set());
    found.get(c.table_name)!.add(c.column_name);
  }
  return found;
}
