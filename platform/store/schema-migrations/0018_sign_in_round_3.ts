import { sql, type Kysely } from 'kysely';

/**
 * Sign-in security, round 3.
 *
 * `rate_limit_hits`: one row per request a budget counts (registration per client address, user-code entries per
 * address and per session), so every API process behind one URL spends the same budget. `bucket` names the budget,
 * `key` whom it counts; a row is worth nothing after `expires_at` (its window's end) and is purged then.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('rate_limit_hits')
    .addColumn('bucket', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('expires_at', 'timestamptz', (c) => c.notNull())
    .execute();
  await db.schema
    .createIndex('rate_limit_hits_bucket_key_at_idx')
    .on('rate_limit_hits')
    .columns(['bucket', 'key', 'at'])
    .execute();
  await db.schema.createIndex('rate_limit_hits_expires_at_idx').on('rate_limit_hits').column('expires_at').execute();
  // Whether an upstream provider may create accounts for addresses outside its SSO domains (off: it speaks only for
  // its own domains).
  for (const table of ['oidc_providers', 'saml_providers'])
    await db.schema
      .alterTable(table)
      .addColumn('allow_other_domains', 'boolean', (c) => c.notNull().defaultTo(sql`false`))
      .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['oidc_providers', 'saml_providers'])
    await db.schema.alterTable(table).dropColumn('allow_other_domains').execute();
  await db.schema.dropTable('rate_limit_hits').execute();
}
