import { CompiledQuery, type Compilable } from 'kysely';
import type { Db } from './database';

/** Stands for the i-th argument while the query is built: no stored text can hold a NUL. */
const MARK = '\u0000argument:';

/**
 * A query of the hottest paths built and compiled by kysely once, then sent as the same SQL text with each call's
 * arguments. Building and compiling took about 0.2 ms per statement, a tenth of the service's CPU per sign-in (a
 * profile of `bench/signin.ts`). Only for queries whose SQL does not depend on the arguments' values: every argument
 * must reach the query as a bound parameter as it is (no null checks, no arrays, no computed values), which the first
 * call checks.
 */
export function prepared<A extends unknown[], R>(
  build: (db: Db, ...args: A) => Compilable<R>,
): (db: Db, ...args: A) => CompiledQuery<R> {
  let text: string | undefined;
  let order: Array<{ argument: number } | { constant: unknown }> = [];
  return (db, ...args) => {
    if (text === undefined) {
      const marks = args.map((_, i) => `${MARK}${i}`) as A;
      const compiled = build(db, ...marks).compile();
      order = compiled.parameters.map((p) =>
        typeof p === 'string' && p.startsWith(MARK) ? { argument: Number(p.slice(MARK.length)) } : { constant: p },
      );
      const used = new Set(order.flatMap((o) => ('argument' in o ? [o.argument] : [])));
      if (used.size !== args.length) throw new Error(`prepared query: an argument is not a parameter: ${compiled.sql}`);
      text = compiled.sql;
    }
    return CompiledQuery.raw(
      text,
      order.map((o) => ('argument' in o ? args[o.argument] : o.constant)),
    );
  };
}

/** The first row a prepared query returns, if any. */
export async function firstRow<R>(db: Db, query: CompiledQuery<R>): Promise<R | undefined> {
  const { rows } = await db.executeQuery(query);
  return rows.length > 0 ? rows[0] : undefined;
}
