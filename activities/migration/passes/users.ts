import { sql } from 'kysely';
import { detectPasswordFormat } from '../../../passwords/formats';
import type { NewUserRow } from '../../../store/schema';
import { normalize } from '../../../store/users';
import { foldClaims } from '../claims';
import { identifierProblem } from '../identifiers';
import { emptyPage, nextCursor, type Pass } from '../types';

const looksLikeEmail = (v: string | null) => v !== null && /^[^@\s]+@[^@\s]+$/.test(v);

/** AspNetUsers + AspNetUserClaims → users, ids verbatim, claims folded, hashes kept as they are. */
export const usersPass: Pass = async ({ source, target, options }, cursor) => {
  const after = cursor ? (JSON.parse(cursor) as string) : null;
  let query = source.selectFrom('AspNetUsers').select(['Id', 'UserName', 'Email', 'PasswordHash']).orderBy('Id').offset(0).fetch(options.pageSize);
  if (after !== null) query = query.where('Id', '>', after);
  let users = await query.execute();
  const page = { ...emptyPage(), read: users.length, next: nextCursor(users, options.pageSize, (u) => u.Id) };
  if (users.length === 0) return page;

  // CreateOnly never touches a user that exists, so a delta sweep skips them before reading their claims.
  if (options.usersMode === 'CreateOnly' && !options.dryRun) {
    const existing = new Set((await target.selectFrom('users').select('id').where('id', 'in', users.map((u) => u.Id)).execute()).map((r) => r.id));
    page.skipped += existing.size;
    users = users.filter((u) => !existing.has(u.Id));
    if (users.length === 0) return page;
  }

  const claims = await source.selectFrom('AspNetUserClaims').select(['UserId', 'ClaimType', 'ClaimValue']).where('UserId', 'in', users.map((u) => u.Id)).execute();
  const claimsByUser = new Map<string, Array<{ type: string | null; value: string | null }>>();
  for (const c of claims) {
    const list = claimsByUser.get(c.UserId) ?? [];
    list.push({ type: c.ClaimType, value: c.ClaimValue });
    claimsByUser.set(c.UserId, list);
  }
  const rows: NewUserRow[] = [];
  for (const user of users) {
    const problem = identifierProblem('user', user.Id);
    const email = looksLikeEmail(user.Email) ? user.Email! : looksLikeEmail(user.UserName) ? user.UserName! : null;
    if (problem || !email) {
      page.skipped++;
      page.warnings.push(problem ?? `user ${user.Id} has no e-mail address and was skipped`);
      continue;
    }
    const folded = foldClaims(claimsByUser.get(user.Id) ?? []);
    const userName = user.UserName ?? email;
    rows.push({
      id: user.Id,
      email,
      normalized_email: normalize(email),
      user_name: userName,
      normalized_user_name: normalize(userName),
      first_name: folded.firstName,
      last_name: folded.lastName,
      company_name: folded.companyName,
      organization_id: folded.organizationId,
      custom_attributes: JSON.stringify(folded.customAttributes),
      // A null hash is an external-SSO-only user; any other hash is kept verbatim and verifies unchanged.
      password_hash: user.PasswordHash,
      password_format: user.PasswordHash ? (detectPasswordFormat(user.PasswordHash) ?? 'unknown') : null,
      external_id: null,
    });
    if (rows[rows.length - 1].password_format === 'unknown') page.warnings.push(`user ${user.Id} has a password hash of an unknown format; the user must reset the password`);
  }
  if (rows.length === 0 || options.dryRun) return page;

  // Another user already holding the e-mail or user name is a duplicate: skipped with a warning, never merged.
  const taken = await target
    .selectFrom('users')
    .select(['id', 'normalized_email', 'normalized_user_name'])
    .where((eb) => eb.or([eb('normalized_email', 'in', rows.map((r) => r.normalized_email)), eb('normalized_user_name', 'in', rows.map((r) => r.normalized_user_name))]))
    .execute();
  // Looked up by key, not searched: under Upsert every row of the page finds itself here.
  const byEmail = new Map(taken.map((t) => [t.normalized_email, t.id]));
  const byUserName = new Map(taken.map((t) => [t.normalized_user_name, t.id]));
  const otherHolder = (holder: string | undefined, id: string) => (holder !== undefined && holder !== id ? holder : undefined);
  const seen = new Map<string, string>();
  const writable = rows.filter((row) => {
    const clash = otherHolder(byEmail.get(row.normalized_email), row.id) ?? otherHolder(byUserName.get(row.normalized_user_name), row.id);
    const earlier = seen.get(row.normalized_email) ?? seen.get(row.normalized_user_name);
    if (clash || earlier) {
      page.skipped++;
      page.warnings.push(`user ${row.id} skipped: e-mail or user name ${row.email} belongs to user ${clash ?? earlier}`);
      return false;
    }
    seen.set(row.normalized_email, row.id).set(row.normalized_user_name, row.id);
    return true;
  });
  if (writable.length === 0) return page;

  const insert = target.insertInto('users').values(writable);
  const written =
    options.usersMode === 'Upsert'
      ? await insert
          .onConflict((oc) =>
            oc.column('id').doUpdateSet((eb) => ({
              email: eb.ref('excluded.email'),
              normalized_email: eb.ref('excluded.normalized_email'),
              user_name: eb.ref('excluded.user_name'),
              normalized_user_name: eb.ref('excluded.normalized_user_name'),
              first_name: eb.ref('excluded.first_name'),
              last_name: eb.ref('excluded.last_name'),
              company_name: eb.ref('excluded.company_name'),
              organization_id: eb.ref('excluded.organization_id'),
              custom_attributes: eb.ref('excluded.custom_attributes'),
              password_hash: eb.ref('excluded.password_hash'),
              password_format: eb.ref('excluded.password_format'),
              updated_at: new Date(),
            })),
          )
          .returning(sql<boolean>`(xmax = 0)`.as('inserted'))
          .execute()
      : await insert.onConflict((oc) => oc.column('id').doNothing()).returning(sql<boolean>`true`.as('inserted')).execute();
  page.created += written.filter((w) => w.inserted).length;
  page.updated += written.filter((w) => !w.inserted).length;
  page.skipped += writable.length - written.length;
  return page;
};
