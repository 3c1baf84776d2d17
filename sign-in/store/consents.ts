import { sql } from 'kysely';
import { persistedGrantKeys } from '../../platform/security/persisted-grant-keys';
import type { Db } from '../../platform/store/database';
import { unexpired } from '../../platform/store/expiry';

/**
 * A remembered consent ("Remember my decision"), kept as Duende IdentityServer keeps it: a persisted grant of type
 * `user_consent`, one per user and client, holding the scopes consented to. Duende DefaultUserConsentStore.cs: the key
 * is `{clientId}|{subjectId}-1` hashed as every persisted grant key is (DefaultGrantStore.GetHashedKey), and the
 * data is its Consent model (SubjectId, ClientId, Scopes, CreationTime, Expiration).
 */
const USER_CONSENT = 'user_consent';
const consentKey = (userId: string, clientId: string) => persistedGrantKeys(`${clientId}|${userId}-1`, USER_CONSENT)[0];

export interface RememberedConsent {
  clientId: string;
  clientName: string | null;
  scopes: string[];
  createdAt: Date;
}

const scopesOf = (data: string): string[] => {
  try {
    const scopes = (JSON.parse(data) as { Scopes?: unknown }).Scopes;
    return Array.isArray(scopes) ? scopes.filter((s): s is string => typeof s === 'string') : [];
  } catch {
    return [];
  }
};

/** The scopes the user consented to for the client and asked to be remembered, while the consent lives. */
export async function findRememberedScopes(db: Db, userId: string, clientId: string): Promise<string[] | undefined> {
  const row = await db
    .selectFrom('grants')
    .select('data')
    .where('key', '=', consentKey(userId, clientId))
    .where('type', '=', USER_CONSENT)
    .where(unexpired('expiration'))
    .executeTakeFirst();
  return row && scopesOf(row.data);
}

/**
 * Remembers (or, with no scopes, forgets) the user's consent to the client, as Duende's DefaultConsentService
 * UpdateConsentAsync does; `lifetimeSeconds` is the client's ConsentLifetime (none: until withdrawn).
 */
export async function rememberConsent(
  db: Db,
  consent: { userId: string; clientId: string; scopes: string[]; lifetimeSeconds?: number | null },
): Promise<void> {
  const { userId, clientId, scopes, lifetimeSeconds } = consent;
  if (scopes.length === 0) return forgetConsent(db, userId, clientId);
  const now = new Date();
  const expiration = lifetimeSeconds ? new Date(now.getTime() + lifetimeSeconds * 1000) : null;
  const data = JSON.stringify({
    SubjectId: userId,
    ClientId: clientId,
    Scopes: scopes,
    CreationTime: now.toISOString(),
    Expiration: expiration?.toISOString() ?? null,
  });
  const row = { type: USER_CONSENT, subject_id: userId, client_id: clientId, creation_time: now, expiration, data };
  await db
    .insertInto('grants')
    .values({ key: consentKey(userId, clientId), ...row, key_hashed: true, data_sealed: false })
    .onConflict((oc) => oc.column('key').doUpdateSet(row))
    .execute();
}

/** Withdraws the user's remembered consent to the client: the next sign-in to it asks again. */
async function forgetConsent(db: Db, userId: string, clientId: string): Promise<void> {
  await db
    .deleteFrom('grants')
    .where('key', '=', consentKey(userId, clientId))
    .where('type', '=', USER_CONSENT)
    .execute();
}

/** Every live remembered consent of the user, with the client's display name, for the account page. */
export async function listRememberedConsents(db: Db, userId: string): Promise<RememberedConsent[]> {
  const rows = await db
    .selectFrom('grants')
    .leftJoin('clients', 'clients.client_id', 'grants.client_id')
    .select(['grants.client_id', 'clients.client_name', 'grants.data', 'grants.creation_time'])
    .where('grants.type', '=', USER_CONSENT)
    .where('grants.subject_id', '=', userId)
    .where(sql<boolean>`(grants.expiration is null or grants.expiration > now())`)
    .orderBy('grants.creation_time', 'desc')
    .execute();
  return rows.map((r) => ({
    clientId: r.client_id,
    clientName: r.client_name,
    scopes: scopesOf(r.data),
    createdAt: r.creation_time,
  }));
}
