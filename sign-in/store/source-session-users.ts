import { sql } from 'kysely';
import type { Db } from '../../platform/store/database';
import { tombstoned } from '../../platform/store/read-through-guards';

/** What decides whether a source session cookie of this user may open a session here. */
export interface SourceSessionUser {
  active: boolean;
  securityStamp: string | null;
  sessionsRevokedAt: Date | null;
  tombstoned: boolean;
}

/** The user with this id as a source session cookie is checked against; undefined when there is none. */
export async function findSourceSessionUser(db: Db, id: string): Promise<SourceSessionUser | undefined> {
  const row = await db
    .selectFrom('users')
    .select(['active', 'security_stamp', 'sessions_revoked_at', tombstoned(sql.ref('users.id')).as('tombstoned')])
    .where('id', '=', id)
    .executeTakeFirst();
  return (
    row && {
      active: row.active,
      securityStamp: row.security_stamp,
      sessionsRevokedAt: row.sessions_revoked_at,
      tombstoned: row.tombstoned,
    }
  );
}
