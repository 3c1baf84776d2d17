import { insertRoles } from '../../store/migrated-configuration';
import { normalize } from '../../../platform/store/users';
import { pageById } from '../id-pages';
import { countWrites, type Pass } from '../types';

/** AspNetRoles → roles, ids verbatim; a role whose name exists already is skipped (assignments resolve by name). */
export const rolesPass: Pass = async (ctx, cursor) => {
  const { rows: roles, page } = await pageById(ctx, 'AspNetRoles', cursor);
  const rows = roles
    .filter((r) => r.Name)
    .map((r) => ({ id: r.Id, name: r.Name!, normalized_name: normalize(r.NormalizedName ?? r.Name!) }));
  page.skipped += roles.length - rows.length;
  if (rows.length === 0 || ctx.options.dryRun) return page;
  countWrites(page, rows.length, await insertRoles(ctx.target, rows));
  return page;
};
