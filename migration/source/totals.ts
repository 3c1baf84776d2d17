import type { Kysely } from 'kysely';
import type { SourceDatabase } from './source-schema';

/**
 * Row counts of the large source tables, for progress lines that show bars. A table the source lacks has no total
 * (the run's own check says what is missing).
 */
export async function sourceTableTotals(source: Kysely<SourceDatabase> | undefined): Promise<Record<string, number>> {
  if (!source) return {};
  const count = async (table: 'AspNetUsers' | 'AspNetUserLogins' | 'AspNetUserRoles' | 'AspNetRoles') =>
    source
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow()
      .then(
        (row) => Number(row.n),
        () => undefined,
      );
  const totals = {
    users: await count('AspNetUsers'),
    logins: await count('AspNetUserLogins'),
    'user-roles': await count('AspNetUserRoles'),
    roles: await count('AspNetRoles'),
  };
  return Object.fromEntries(
    Object.entries(totals).filter((entry): entry is [string, number] => entry[1] !== undefined),
  );
}
