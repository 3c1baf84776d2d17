import type { Db } from './database';

/**
 * The development cookie keys kept beside the provider's artefacts: the first API process on a database stores
 * `candidate`, every later one (and this one, racing another) reads what the first stored.
 */
export async function storedDevelopmentCookieKeys(db: Db, candidate: string[]): Promise<string[]> {
  await db
    .insertInto('oidc_payloads')
    .values({ model: 'CookieKeys', id: 'development', payload: JSON.stringify({ keys: candidate }) })
    .onConflict((oc) => oc.columns(['model', 'id']).doNothing())
    .execute();
  const row = await db
    .selectFrom('oidc_payloads')
    .select('payload')
    .where('model', '=', 'CookieKeys')
    .where('id', '=', 'development')
    .executeTakeFirstOrThrow();
  return (row.payload as { keys: string[] }).keys;
}
