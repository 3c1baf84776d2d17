import { randomUUID } from 'node:crypto';
import type { Db } from '../../platform/store/database';
import { deleteCreatedBefore } from '../../platform/store/retention';

/**
 * A stashed hash is needed until its attempt has ended: the attempt removes it as its last step when it kept the user
 * (who then holds the hash), the API once it has the answer. One still here after a day belongs to a request that
 * never started a workflow, to an attempt whose API gave up waiting before it was refused, or to an attempt that no
 * worker picked up for a day, which then ends with CredentialExpired and asks the client to submit again.
 */
export const ABANDONED_AFTER_HOURS = 24;

export async function stashPasswordHash(db: Db, passwordHash: string): Promise<string> {
  const id = randomUUID();
  await db.insertInto('pending_credentials').values({ id, password_hash: passwordHash }).execute();
  return id;
}

export async function readPasswordHash(db: Db, id: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('pending_credentials')
    .select('password_hash')
    .where('id', '=', id)
    .executeTakeFirst();
  return row?.password_hash;
}

export async function discardPasswordHash(db: Db, id: string): Promise<void> {
  await db.deleteFrom('pending_credentials').where('id', '=', id).execute();
}

export function purgeAbandonedCredentials(db: Db): Promise<number> {
  return deleteCreatedBefore(db, 'pending_credentials', ABANDONED_AFTER_HOURS);
}
