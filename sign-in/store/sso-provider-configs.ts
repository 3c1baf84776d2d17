import type { Selectable } from 'kysely';
import { protectText, unprotectText, type KeyRing } from '../../platform/security/data-protection';
import type { Db } from '../../platform/store/database';
import { deletedAny } from '../../platform/store/row-counts';
import { domainOf } from '../../platform/store/users';
import type { OidcProvidersTable, SamlProvidersTable } from '../../platform/store/schema';

export type OidcProviderRow = Selectable<OidcProvidersTable>;
export type SamlProviderRow = Selectable<SamlProvidersTable>;

/** The enabled provider an e-mail domain signs in with (home-realm discovery), if any. */
export function findSsoProvider(db: Db, domain: string) {
  return db
    .selectFrom('sso_domains')
    .select(['provider_kind', 'provider_id'])
    .where('domain', '=', domain.toLowerCase())
    .executeTakeFirst();
}

/**
 * Whether an e-mail address belongs to an SSO domain whose provider is enabled: such an address signs in and
 * registers only through that provider (a disabled provider sends nobody anywhere, so its domain falls back to
 * passwords).
 */
export async function isSsoDomainEmail(db: Db, email: string): Promise<boolean> {
  const row = await db
    .selectFrom('sso_domains')
    .leftJoin('oidc_providers', (join) =>
      join.onRef('oidc_providers.id', '=', 'sso_domains.provider_id').on('sso_domains.provider_kind', '=', 'oidc'),
    )
    .leftJoin('saml_providers', (join) =>
      join.onRef('saml_providers.id', '=', 'sso_domains.provider_id').on('sso_domains.provider_kind', '=', 'saml'),
    )
    .select('sso_domains.domain')
    .where('sso_domains.domain', '=', domainOf(email))
    .where((eb) => eb.or([eb('oidc_providers.enabled', '=', true), eb('saml_providers.enabled', '=', true)]))
    .executeTakeFirst();
  return row !== undefined;
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
  return (await domainsByProvider(db, kind, providerId)).get(providerId) ?? [];
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

export function listOidcProviders(db: Db): Promise<OidcProviderRow[]> {
  return db.selectFrom('oidc_providers').selectAll().orderBy('id').execute();
}

/** The SSO domains of every provider of a kind (or of one of them), by provider id. */
export async function domainsByProvider(
  db: Db,
  kind: 'saml' | 'oidc',
  providerId?: string,
): Promise<Map<string, string[]>> {
  const rows = await db
    .selectFrom('sso_domains')
    .select(['domain', 'provider_id'])
    .where('provider_kind', '=', kind)
    .$if(providerId !== undefined, (q) => q.where('provider_id', '=', providerId!))
    .orderBy('domain')
    .execute();
  const byProvider = new Map<string, string[]>();
  for (const row of rows) byProvider.set(row.provider_id, [...(byProvider.get(row.provider_id) ?? []), row.domain]);
  return byProvider;
}

export type OidcProviderWrite = Omit<OidcProviderRow, 'client_secret' | 'client_secret_sealed'> & {
  /** Plaintext; undefined keeps the stored secret (it is write-only, so a provider read and written back has none). */
  clientSecret?: string | null;
};

export type SamlProviderWrite = Omit<SamlProviderRow, 'allow_idp_initiated'> & { allow_idp_initiated: boolean };

type PutResult =
  | { status: 'created' | 'replaced' | 'exists' | 'missing' }
  | { status: 'domain-taken'; domain: string; holder: string };

const TABLES = { oidc: 'oidc_providers', saml: 'saml_providers' } as const;

/**
 * Writes a whole provider with its SSO domains in one transaction; a domain held by another provider (of either kind)
 * refuses the write. `mode` says whether the provider must be new (create) or exist (replace).
 */
async function putSsoProvider(
  db: Db,
  kind: 'saml' | 'oidc',
  id: string,
  write: (trx: Db) => Promise<unknown>,
  domains: string[],
  mode: 'create' | 'replace',
): Promise<PutResult> {
  return db.transaction().execute(async (trx) => {
    const existing = await trx
      .selectFrom(TABLES[kind])
      .select('id')
      .where('id', '=', id)
      .forUpdate()
      .executeTakeFirst();
    if (mode === 'create' && existing) return { status: 'exists' as const };
    if (mode === 'replace' && !existing) return { status: 'missing' as const };
    if (domains.length > 0) {
      const held = await trx
        .selectFrom('sso_domains')
        .select(['domain', 'provider_kind', 'provider_id'])
        .where('domain', 'in', domains)
        .where((eb) => eb.or([eb('provider_kind', '!=', kind), eb('provider_id', '!=', id)]))
        .executeTakeFirst();
      if (held)
        return {
          status: 'domain-taken' as const,
          domain: held.domain,
          holder: `${held.provider_kind} provider ${held.provider_id}`,
        };
    }
    await write(trx);
    await trx.deleteFrom('sso_domains').where('provider_kind', '=', kind).where('provider_id', '=', id).execute();
    if (domains.length > 0)
      await trx
        .insertInto('sso_domains')
        .values(domains.map((domain) => ({ domain, provider_kind: kind, provider_id: id })))
        .execute();
    return { status: existing ? ('replaced' as const) : ('created' as const) };
  });
}

export function putOidcProvider(
  db: Db,
  ring: KeyRing,
  provider: OidcProviderWrite,
  domains: string[],
  mode: 'create' | 'replace',
): Promise<PutResult> {
  const { clientSecret, ...row } = provider;
  const values = {
    ...row,
    scopes: JSON.stringify(row.scopes),
    login_provider_names: JSON.stringify(row.login_provider_names),
    ...(clientSecret === undefined
      ? {}
      : {
          client_secret: clientSecret === null ? null : protectText(clientSecret, ring),
          client_secret_sealed: clientSecret !== null,
        }),
  };
  return putSsoProvider(
    db,
    'oidc',
    provider.id,
    (trx) =>
      trx
        .insertInto('oidc_providers')
        .values({ client_secret: null, ...values })
        .onConflict((oc) => oc.column('id').doUpdateSet(values))
        .execute(),
    domains,
    mode,
  );
}

export function putSamlProvider(
  db: Db,
  provider: SamlProviderWrite,
  domains: string[],
  mode: 'create' | 'replace',
): Promise<PutResult> {
  const values = { ...provider, login_provider_names: JSON.stringify(provider.login_provider_names) };
  return putSsoProvider(
    db,
    'saml',
    provider.id,
    (trx) =>
      trx
        .insertInto('saml_providers')
        .values(values)
        .onConflict((oc) => oc.column('id').doUpdateSet(values))
        .execute(),
    domains,
    mode,
  );
}

/** Its SSO domains go with it; the external logins stay (a provider set up again under the same id finds them). */
export async function deleteSsoProvider(db: Db, kind: 'saml' | 'oidc', id: string): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    await trx.deleteFrom('sso_domains').where('provider_kind', '=', kind).where('provider_id', '=', id).execute();
    return deletedAny(await trx.deleteFrom(TABLES[kind]).where('id', '=', id).executeTakeFirst());
  });
}

export function findSamlProvider(db: Db, id: string): Promise<SamlProviderRow | undefined> {
  return db.selectFrom('saml_providers').selectAll().where('id', '=', id).executeTakeFirst();
}

export function listSamlProviders(db: Db): Promise<SamlProviderRow[]> {
  return db.selectFrom('saml_providers').selectAll().orderBy('id').execute();
}
