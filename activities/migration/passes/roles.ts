import { normalize } from '../../../store/users';
import { countWrites, keysetPage, type Pass } from '../types';

/** AspNetRoles → roles, ids verbatim; a role whose name exists already is skipped (assignments resolve by name). */
export const rolesPass: Pass = async (ctx, cursor) => {
  const { rows: roles, page } = await keysetPage(
    cursor,
    ctx.options.pageSize,
    (after) =>
      ctx.source
        .selectFrom('AspNetRoles')
        .select(['Id', 'Name', 'NormalizedName'])
        .$if(after !== undefined, (q) => q.where('Id', '>', after as string))
        .orderBy('Id')
        .offset(0)
        .fetch(ctx.options.pageSize)
        .execute(),
    (r) => r.Id,
  );
  const rows = roles
    .filter((r) => r.Name)
    .map((r) => ({ id: r.Id, name: r.Name!, normalized_name: normalize(r.NormalizedName ?? r.Name!) }));
  page.skipped += roles.length - rows.length;
  if (rows.length === 0 || ctx.options.dryRun) return page;
  const written = await ctx.target
    .insertInto('roles')
    .values(rows)
    .onConflict((oc) => oc.doNothing())
    .returning('id')
    .execute();
  countWrites(page, rows.length, written.length);
  return page;
};
