import type { Selectable } from 'kysely';
import { idPage } from '../source/configuration-reads';
import type { SourceDatabase } from '../source/source-schema';
import { emptyPage, nextCursor, type PageResult, type PassContext } from './types';

/** Keyset pages of the passes that page by a key of their own table (kept apart from types.ts, which workflows import). */

/**
 * One keyset page of a pass that pages by one key of its own table (roles, providers, refresh tokens): `read` gets the
 * last key of the previous page (undefined on the first) and returns up to `pageSize` rows ordered by that key.
 */
export async function keysetPage<Row>(
  cursor: string | null,
  pageSize: number,
  read: (after: unknown) => Promise<Row[]>,
  keyOf: (row: Row) => unknown,
): Promise<{ rows: Row[]; page: PageResult }> {
  const rows = await read(cursor ? JSON.parse(cursor) : undefined);
  return { rows, page: { ...emptyPage(), read: rows.length, next: nextCursor(rows, pageSize, keyOf) } };
}

/** Source tables whose primary key is a string `Id`. */
type StringKeyedTable = {
  [T in keyof SourceDatabase]: SourceDatabase[T] extends { Id: string } ? T : never;
}[keyof SourceDatabase];

/** One keyset page of a whole source table keyed by a string `Id` (roles, SAML and OIDC providers). */
export function pageById<T extends StringKeyedTable>(ctx: PassContext, table: T, cursor: string | null) {
  type Row = Selectable<SourceDatabase[T]> & { Id: string };
  return keysetPage(
    cursor,
    ctx.options.pageSize,
    async (after) => (await idPage(ctx.source, table, after as string | undefined, ctx.options.pageSize)) as Row[],
    (row) => row.Id,
  );
}
