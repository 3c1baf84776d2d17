import { sql, type Kysely } from 'kysely';

/**
 * `creation_reservations`: one creation attempt in flight per e-mail (workflow ids no longer carry e-mails).
 * `idempotency_keys`: a client's Idempotency-Key, scoped to its credential, with the answer once there is one.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('creation_reservations')
    .addColumn('normalized_email', 'text', (c) => c.primaryKey())
    .addColumn('workflow_id', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .createTable('idempotency_keys')
    .addColumn('scope', 'text', (c) => c.notNull())
    .addColumn('key', 'text', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('answer', 'jsonb')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('idempotency_keys_pkey', ['scope', 'key'])
    .execute();
  await db.schema.createIndex('idempotency_keys_created_at_idx').on('idempotency_keys').column('created_at').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('idempotency_keys').execute();
  await db.schema.dropTable('creation_reservations').execute();
}
