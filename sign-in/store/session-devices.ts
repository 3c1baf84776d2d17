import { sql } from 'kysely';
import type { Db } from '../../platform/store/database';

/** The longest User-Agent kept: enough to tell the browser and system apart, never a payload of its own. */
const USER_AGENT_CHARS = 512;

/**
 * Where a sign-in came from, recorded when its session first authorizes a client: the first record of a session
 * stays (its sign-in), later authorizations of the same session leave it.
 */
export async function recordSessionDevice(
  db: Db,
  device: { sessionId: string; userId: string; clientAddress?: string; userAgent?: string },
): Promise<void> {
  await db
    .insertInto('session_devices')
    .values({
      session_id: device.sessionId,
      user_id: device.userId,
      client_address: device.clientAddress ?? null,
      user_agent: device.userAgent?.slice(0, USER_AGENT_CHARS) ?? null,
    })
    .onConflict((oc) => oc.column('session_id').doNothing())
    .execute();
}

/** The devices of the user's sessions among `sessionIds`, by session id. */
export async function findSessionDevices(db: Db, userId: string, sessionIds: string[]) {
  const devices = new Map<string, { clientAddress: string | null; userAgent: string | null; recordedAt: Date }>();
  if (sessionIds.length === 0) return devices;
  const rows = await db
    .selectFrom('session_devices')
    .select(['session_id', 'client_address', 'user_agent', 'signed_in_at'])
    .where('user_id', '=', userId)
    .where('session_id', 'in', sessionIds)
    .execute();
  for (const r of rows)
    devices.set(r.session_id, { clientAddress: r.client_address, userAgent: r.user_agent, recordedAt: r.signed_in_at });
  return devices;
}

/** The display names (ClientName) of clients, by client id; a client without one is absent. */
export async function findClientNames(db: Db, clientIds: string[]): Promise<Map<string, string>> {
  if (clientIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('clients')
    .select(['client_id', 'client_name'])
    .where('client_id', 'in', clientIds)
    .execute();
  return new Map(rows.filter((r) => r.client_name).map((r) => [r.client_id, r.client_name!]));
}

/**
 * Devices of sessions that have ended (signed out, ended from the account page or by an admin, expired), kept a day
 * after their sign-in so a session being written is never purged under it.
 */
export async function purgeSessionDevices(db: Db): Promise<number> {
  const result = await db
    .deleteFrom('session_devices')
    .where('signed_in_at', '<', sql<Date>`now() - interval '1 day'`)
    .where(
      sql<boolean>`not exists (select from oidc_payloads where model = 'Session' and id = session_devices.session_id)`,
    )
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
