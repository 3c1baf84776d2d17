import type { Selectable } from 'kysely';
import { protectText, unprotectText, type KeyRing } from '../security/data-protection';
import type { Db } from './database';
import type { OidcProvidersTable } from './schema';

export type OidcProviderRow = Selectable<OidcProvidersTable>;

/** The enabled provider an e-mail domain signs in with (home-realm discovery), if any. */
export function findSsoProvider(db: Db, domain: string) {
  return db
    .selectFrom('sso_domains')
    .select(['provider_kind', 'provider_id'])
    .where('domain', '=', domain.toLowerCase())
    .executeTakeFirst();
}

export function findOidcProvider(db: Db, id: string): Promise<OidcProviderRow | undefined> {
  return db.selectFrom('oidc_providers').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The provider's client secret in plaintext. */
export const oidcClientSecret = (row: OidcProviderRow, ring: KeyRing) =>
  row.client_secret === null
    ? undefined
    : row.client_secret_sealed
      ? unprotectText(row.client_secret, ring)
      : row.client_secret;

/** Seals the client secrets stored in plaintext (by the migration before secrets were sealed); returns how many. */
export async function sealOidcProviderSecrets(db: Db, ring: KeyRing): Promise<number> {
  const plain = await db
    .selectFrom('oidc_providers')
    .select(['id', 'client_secret'])
    .where('client_secret_sealed', '=', false)
    .where('client_secret', 'is not', null)
    .execute();
  for (const row of plain)
    await db
      .updateTable('oidc_providers')
      .set({ client_secret: protectText(row.client_secret!, ring), client_secret_sealed: true })
      .where('id', '=', row.id)
      .where('client_secret_sealed', '=', false)
      .execute();
  return plain.length;
}

export async function domainsOf(db: Db, kind: 'saml' | 'oidc', providerId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('sso_domains')
    .select('domain')
    .where('provider_kind', '=', kind)
    .where('provider_id', '=', providerId)
    .execute();
  return rows.map((r) => r.domain);
}

/** The user an external login (one of the provider's scheme names and the subject there) belongs to. */
export function findUserByLogin(db: Db, loginProviders: string[], providerKey: string) {
  return db
    .selectFrom('user_logins')
    .innerJoin('users', 'users.id', 'user_logins.user_id')
    .select(['users.id', 'users.active'])
    .where('user_logins.login_provider', 'in', loginProviders)
    .where('user_logins.provider_key', '=', providerKey)
    .executeTakeFirst();
}

/** Records an external login of a user; a second record of the same login changes nothing. */
export async function linkLogin(
  db: Db,
  login: { loginProvider: string; providerKey: string; displayName: string; userId: string },
): Promise<void> {
  await db
    .insertInto('user_logins')
    .values({
      login_provider: login.loginProvider,
      provider_key: login.providerKey,
      provider_display_name: login.displayName,
      user_id: login.userId,
    })
    .onConflict((oc) => oc.doNothing())
    .execute();
}
