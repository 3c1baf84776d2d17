import { insertRoles } from '../../store/migrated-configuration';
import { normalize } from '../../../platform/store/users';
import { withoutCommitting } from '../../store/uncommitted';
import { pageById } from '../id-pages';
import { countWrites, type Pass } from '../types';

/** AspNetRoles → roles, ids verbatim; a role whose name exists already is skipped (assignments resolve by name). */
export const rolesPass: Pass = async (ctx, cursor) => {
  const { rows: roles, page } = await pageById(ctx, 'AspNetRoles', cursor);
  const rows = roles
    .filter((r) => r.Name)
    .map((r) => ({ id: r.Id, name: r.Name!, normalized_name: normalize(r.NormalizedName ?? r.Name!) }));
  page.skipped += roles.length - rows.length;
  if (rows.length === 0) return page;
  // A dry run writes as the real run would and rolls back: its counts are the real run's, and nothing is kept.
  const written = ctx.options.dryRun
    ? await withoutCommitting(ctx.target, (trx) => insertRoles(trx, rows))
    : await insertRoles(ctx.target, rows);
  countWrites(page, rows.length, written);
  return page;
};
