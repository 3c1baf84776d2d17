import { sql, type SelectQueryBuilder } from 'kysely';

/**
 * One SCIM page (startIndex is 1-based) of the rows a query selects, oldest first, and the total count of matches.
 * `selected` is `query` with its columns chosen.
 */
export async function scimPage<DB, TB extends keyof DB, Row>(
  query: SelectQueryBuilder<DB, TB, object>,
  selected: SelectQueryBuilder<DB, TB, Row>,
  startIndex: number,
  count: number,
): Promise<{ total: number; rows: Row[] }> {
  const counted = await query.select(sql<string>`count(*)`.as('total')).executeTakeFirstOrThrow();
  const total = Number((counted as { total: string }).total);
  const rows =
    count === 0
      ? []
      : await selected
          .orderBy(sql`created_at`)
          .orderBy(sql`id`)
          .offset(startIndex - 1)
          .limit(count)
          .execute();
  return { total, rows: rows };
}
