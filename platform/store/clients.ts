import { sql } from 'kysely';
import { randomUUID } from 'node:crypto';
import type { Insertable, Selectable } from 'kysely';
import type { Db } from './database';
import { unexpired } from './expiry';
import type { ClientSecretsTable, ClientsTable } from './schema';
import { deletedAny } from './row-counts';

export type ClientRow = Selectable<ClientsTable>;
export type NewClientRow = Insertable<ClientsTable>;
export type StoredSecret = Pick<Selectable<ClientSecretsTable>, 'value' | 'description' | 'expiration'>;

export function findClient(db: Db, clientId: string): Promise<ClientRow | undefined> {
  return db.selectFrom('clients').selectAll().where('client_id', '=', clientId).executeTakeFirst();
}

export function listClients(db: Db): Promise<ClientRow[]> {
  return db.selectFrom('clients').selectAll().orderBy('client_id').execute();
}

/** A client with the values of its unexpired secrets, and when the first of those expires (null: none does). */
export type ClientWithLiveSecrets = ClientRow & { live_secrets: string[]; next_secret_expiry: Date | null };

/**
 * A client with the values of its unexpired secrets, in one statement: authenticating a client at the token or
 * introspection endpoint needs both, and they were two round trips per request.
 */
export function findClientWithLiveSecrets(db: Db, clientId: string): Promise<ClientWithLiveSecrets | undefined> {
  return db
    .selectFrom('clients')
    .selectAll('clients')
    .select(
      sql<string[]>`coalesce((select json_agg(value) from client_secrets
                              where client_secrets.client_id = clients.client_id and ${unexpired('expiration')}),
                             '[]'::json)`.as('live_secrets'),
    )
    .select(
      sql<Date | null>`(select min(expiration) from client_secrets
                        where client_secrets.client_id = clients.client_id and expiration > now())`.as(
        'next_secret_expiry',
      ),
    )
    .where('client_id', '=', clientId)
    .executeTakeFirst();
}

/**
 * Replaces the whole client and its secrets (undefined secrets keep the stored ones: they are write-only, so a client
 * read and written back has none to give); returns whether it existed before. `keepProvisioningApps` leaves an
 * existing client's apps as they are: configuration does not carry them, the admin API sets them.
 */
export async function putClient(
  db: Db,
  row: NewClientRow,
  secrets: StoredSecret[] | undefined,
  { keepProvisioningApps = false } = {},
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const existed = await trx
      .selectFrom('clients')
      .select('client_id')
      .where('client_id', '=', row.client_id)
      .forUpdate()
      .executeTakeFirst();
    const { client_id, created_at, provisioning_apps, ...rest } = row;
    const changes = keepProvisioningApps ? rest : { ...rest, provisioning_apps };
    await trx
      .insertInto('clients')
      .values(row)
      .onConflict((oc) => oc.column('client_id').doUpdateSet(changes))
      .execute();
    if (secrets === undefined) return existed !== undefined;
    await trx.deleteFrom('client_secrets').where('client_id', '=', row.client_id).execute();
    if (secrets.length > 0)
      await trx
        .insertInto('client_secrets')
        .values(secrets.map((s) => ({ ...s, id: randomUUID(), client_id: row.client_id })))
        .execute();
    return existed !== undefined;
  });
}

/** Its secrets go with it (the foreign key cascades). */
export async function deleteClient(db: Db, clientId: string): Promise<boolean> {
  return deletedAny(await db.deleteFrom('clients').where('client_id', '=', clientId).executeTakeFirst());
}

/** The ids of the clients whose ProvisioningApps name an app. */
export async function clientsListingApp(db: Db, appId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('clients')
    .select('client_id')
    .where(sql<boolean>`provisioning_apps ? ${appId}`)
    .orderBy('client_id')
    .execute();
  return rows.map((r) => r.client_id);
}

/** The enabled clients the migration made of ApiResources (audiences, not clients), by name, with their scopes. */
export function listApiResourceClients(db: Db) {
  return db
    .selectFrom('clients')
    .select(['client_id', 'allowed_scopes'])
    .where('enabled', '=', true)
    .where((eb) => eb(eb.ref('settings', '->>').key('apiResource' as never), '=', 'true'))
    .orderBy('client_id')
    .execute();
}
