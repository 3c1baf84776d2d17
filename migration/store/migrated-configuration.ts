import type { Insertable } from 'kysely';
import type { Db } from '../../platform/store/database';
import { insertSkippingExisting } from './insert-new';
import type {
  ClientSecretsTable,
  ClientsTable,
  GrantsTable,
  OidcProvidersTable,
  RolesTable,
  SamlProvidersTable,
  ScopesTable,
  SsoDomainsTable,
} from '../../platform/store/schema';

/**
 * What the IdentityServer migration writes besides users: scopes, clients, roles, SSO providers and their domains,
 * refresh tokens. Every write skips what exists (seeded or earlier rows win), so a run repeated writes nothing new.
 */

/** Inserts the scopes whose names are new; returns how many. */
export async function insertScopes(db: Db, rows: Array<Insertable<ScopesTable>>): Promise<number> {
  const written = await db
    .insertInto('scopes')
    .values(rows)
    .onConflict((oc) => oc.column('name').doNothing())
    .returning('name')
    .execute();
  return written.length;
}

export type MigratedClientRow = Pick<Insertable<ClientsTable>, 'client_id'> & Partial<Insertable<ClientsTable>>;

/** Inserts the clients whose ids are new, and the secrets of those only, in one transaction; returns the ids created. */
export async function insertClients(
  db: Db,
  clients: Array<{ row: MigratedClientRow; secrets: Array<Insertable<ClientSecretsTable>> }>,
): Promise<Set<string>> {
  return db.transaction().execute((trx) => insertClientsWithin(trx, clients));
}

/** insertClients' writes, within a transaction the caller holds (a dry run's, which is rolled back). */
export async function insertClientsWithin(
  trx: Db,
  clients: Array<{ row: MigratedClientRow; secrets: Array<Insertable<ClientSecretsTable>> }>,
): Promise<Set<string>> {
  const written = await trx
    .insertInto('clients')
    // The columns a migrated client leaves out (provisioning apps, the lists an API resource has none of) have
    // defaults in the schema, which the table's type does not tell.
    .values(clients.map((c) => c.row as Insertable<ClientsTable>))
    .onConflict((oc) => oc.column('client_id').doNothing())
    .returning('client_id')
    .execute();
  const created = new Set(written.map((w) => w.client_id));
  const secrets = clients.filter((c) => created.has(c.row.client_id)).flatMap((c) => c.secrets);
  if (secrets.length > 0)
    await trx
      .insertInto('client_secrets')
      .values(secrets)
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
  return created;
}

/** Inserts the roles whose ids and names are new; returns how many. */
export async function insertRoles(db: Db, rows: Array<Insertable<RolesTable>>): Promise<number> {
  const written = await db
    .insertInto('roles')
    .values(rows)
    .onConflict((oc) => oc.doNothing())
    .returning('id')
    .execute();
  return written.length;
}

export const insertSamlProviders = (db: Db, rows: Array<Insertable<SamlProvidersTable>>) =>
  insertSkippingExisting(db.insertInto('saml_providers').values(rows), db.isTransaction);

export const insertOidcProviders = (db: Db, rows: Array<Insertable<OidcProvidersTable>>) =>
  insertSkippingExisting(db.insertInto('oidc_providers').values(rows), db.isTransaction);

/**
 * Inserts the SSO domains that are new; returns, for each of the others, the provider that holds it (possibly the
 * same one, from an earlier run).
 */
export async function insertSsoDomains(db: Db, rows: Array<Insertable<SsoDomainsTable>>) {
  const written = await db
    .insertInto('sso_domains')
    .values(rows)
    .onConflict((oc) => oc.column('domain').doNothing())
    .returning('domain')
    .execute();
  const mine = new Set(written.map((w) => w.domain));
  const others = rows.filter((r) => !mine.has(r.domain)).map((r) => r.domain);
  return others.length === 0 ? [] : db.selectFrom('sso_domains').selectAll().where('domain', 'in', others).execute();
}

/** Who holds these SSO domains in the target now (what a dry run reads in place of insertSsoDomains' refusals). */
export async function ssoDomainHolders(db: Db, domains: string[]) {
  return domains.length === 0 ? [] : db.selectFrom('sso_domains').selectAll().where('domain', 'in', domains).execute();
}

/** Inserts the refresh-token grants whose keys are new; returns how many. */
export async function insertGrants(db: Db, rows: Array<Insertable<GrantsTable>>): Promise<number> {
  if (rows.length === 0) return 0;
  const written = await db
    .insertInto('grants')
    .values(rows)
    .onConflict((oc) => oc.column('key').doNothing())
    .returning('key')
    .execute();
  return written.length;
}
