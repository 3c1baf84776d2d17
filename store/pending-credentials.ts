import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Db } from './database';
import type { Database } from './schema';

/** Credentials that no workflow consumed within this time belong to requests that never started one. */
const ABANDONED_AFTER_HOURS = 24;

export async function stashPasswordHash(db: Db, passwordHash: string): Promise<string> {
  const id = randomUUID();
  await db.insertInto('pending_credentials').values({ id, password_hash: passwordHash }).execute();
  return id;
}

export async function takePasswordHash(db: Kysely<Database>, id: string): Promise<string | undefined> {
  const row = await db.deleteFrom('pending_credentials').where('id', '=', id).returning('password_hash').executeTakeFirst();
  return row?.password_hash;
}

export async function discardPasswordHash(db: Db, id: string): Promise<void> {
  await db.deleteFrom('pending_credentials').where('id', '=', id).execute();
}

export async function purgeAbandonedCredentials(db: Db): Promise<number> {
  const cutoff = new Date(Date.now() - ABANDONED_AFTER_HOURS * 3600_000);
  const result = await db.deleteFrom('pending_credentials').where('created_at', '<', cutoff).executeTakeFirst();
  return Number(result.numDeletedRows);
}
