import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { Db } from '../../platform/store/database';
import { deletedAny, updatedAny } from '../../platform/store/row-counts';

const digest = (token: string) => createHash('sha256').update(token).digest('hex');

/** The token is returned once and only its digest is kept. */
export async function createScimToken(db: Db, description: string | null): Promise<{ id: string; token: string }> {
  const id = randomUUID();
  const token = `scim_${randomBytes(32).toString('base64url')}`;
  await db
    .insertInto('scim_tokens')
    .values({ id, token_hash: digest(token), description, last_used_at: null })
    .execute();
  return { id, token };
}

export async function listScimTokens(db: Db) {
  const rows = await db
    .selectFrom('scim_tokens')
    .select(['id', 'description', 'created_at', 'last_used_at'])
    .orderBy('created_at')
    .execute();
  return rows.map((r) => ({
    id: r.id,
    description: r.description,
    createdAt: r.created_at,
    lastUsedAt: r.last_used_at,
  }));
}

export async function revokeScimToken(db: Db, id: string): Promise<boolean> {
  return deletedAny(await db.deleteFrom('scim_tokens').where('id', '=', id).executeTakeFirst());
}

/** Looking the digest up is a constant-time comparison in effect: the presented token never meets a stored one. */
export async function isValidScimToken(db: Db, token: string): Promise<boolean> {
  const result = await db
    .updateTable('scim_tokens')
    .set({ last_used_at: new Date() })
    .where('token_hash', '=', digest(token))
    .executeTakeFirst();
  return updatedAny(result);
}
