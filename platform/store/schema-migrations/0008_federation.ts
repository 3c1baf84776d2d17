import { sql, type Kysely } from 'kysely';

/**
 * Federated sign-in: each upstream provider names the source's `LoginProvider` schemes that mean it (so migrated
 * external logins keep working; empty means its own id), and OIDC provider secrets are sealed at rest (rows stored
 * before are sealed at the next start, like signing keys). SAML providers gain the SP entity id and the IdP-initiated
 * switch of the admin API.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  for (const table of ['oidc_providers', 'saml_providers'])
    await db.schema
      .alterTable(table)
      .addColumn('login_provider_names', 'jsonb', (c) => c.notNull().defaultTo(sql`'[]'::jsonb`))
      .execute();
  await db.schema
    .alterTable('oidc_providers')
    .addColumn('client_secret_sealed', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute();
  // The SP entity id a customer's IdP already trusts (default: {Api:PublicUrl}/saml/{id}), and IdP-initiated sign-in.
  await db.schema
    .alterTable('saml_providers')
    .addColumn('sp_entity_id', 'text')
    .addColumn('allow_idp_initiated', 'boolean', (c) => c.notNull().defaultTo(false))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('saml_providers').dropColumn('sp_entity_id').dropColumn('allow_idp_initiated').execute();
  await db.schema.alterTable('oidc_providers').dropColumn('client_secret_sealed').execute();
  for (const table of ['oidc_providers', 'saml_providers'])
    await db.schema.alterTable(table).dropColumn('login_provider_names').execute();
}
