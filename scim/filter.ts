import type { Expression, ExpressionBuilder, SqlBool } from 'kysely';
import { parse, type Filter } from 'scim2-parse-filter';
import { ScimError } from './scim-errors';

/** How one SCIM attribute (lower-cased path) compares against a table: equality only, which is what Okta and Entra send. */
export type AttributeMap<DB, TB extends keyof DB> = Record<
  string,
  (eb: ExpressionBuilder<DB, TB>, value: string | number | boolean | null) => Expression<SqlBool>
>;

/**
 * Translates a SCIM filter into a WHERE condition: `eq` on the mapped attributes, `and`, `or`, and value paths
 * such as `emails[type eq "work"]` (the value path's own filter is translated with the `emails.` prefix).
 */
export function scimFilterToSql<DB, TB extends keyof DB>(filter: string, attributes: AttributeMap<DB, TB>) {
  let ast: Filter;
  try {
    ast = parse(filter);
  } catch {
    // The parser's own words are tokenizer-speak that repeat the caller's input; say what a filter looks like.
    throw new ScimError(
      400,
      'filter: cannot be parsed; RFC 7644 §3.4.2.2 filters look like userName eq "value", joined with and/or, strings in double quotes',
      'invalidFilter',
    );
  }
  return (eb: ExpressionBuilder<DB, TB>): Expression<SqlBool> => translate(eb, ast, attributes, '');
}

function translate<DB, TB extends keyof DB>(
  eb: ExpressionBuilder<DB, TB>,
  f: Filter,
  attributes: AttributeMap<DB, TB>,
  prefix: string,
): Expression<SqlBool> {
  switch (f.op) {
    case 'and':
      return eb.and(f.filters.map((inner) => translate(eb, inner, attributes, prefix)));
    case 'or':
      return eb.or(f.filters.map((inner) => translate(eb, inner, attributes, prefix)));
    case '[]':
      return translate(eb, f.valFilter, attributes, `${f.attrPath.toLowerCase()}.`);
    case 'eq': {
      const path = `${prefix}${f.attrPath.toLowerCase()}`;
      // Own attributes only: a path such as `constructor` must not find Object.prototype's.
      const column = Object.hasOwn(attributes, path) ? attributes[path] : undefined;
      if (!column) throw new ScimError(400, `filtering on ${f.attrPath} is not supported`, 'invalidFilter');
      return column(eb, f.compValue);
    }
    default:
      throw new ScimError(
        400,
        `the filter operator ${f.op} is not supported (supported: eq, and, or, value paths)`,
        'invalidFilter',
      );
  }
}
