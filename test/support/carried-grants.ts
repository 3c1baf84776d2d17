import { randomUUID } from 'node:crypto';
import type { Db } from '../../platform/store/database';

/**
 * A `grants` row as the migration writes one: a source fork's refresh token (its handle verbatim as the key, its data
 * in the service's shape, not sealed) unless `type` says otherwise. Answers the key.
 */
export async function storeCarriedOverGrant(
  db: Db,
  grant: {
    subjectId: string;
    clientId: string;
    createdAt: Date;
    expiresAt: Date;
    data: Record<string, unknown>;
    key?: string;
    type?: string;
  },
): Promise<string> {
  const key = grant.key ?? `carried-${randomUUID()}`;
  await db
    .insertInto('grants')
    .values({
      key,
      type: grant.type ?? 'refresh_token',
      subject_id: grant.subjectId,
      session_id: null,
      client_id: grant.clientId,
      description: null,
      creation_time: grant.createdAt,
      expiration: grant.expiresAt,
      consumed_time: null,
      data: JSON.stringify(grant.data),
    })
    .execute();
  return key;
}
