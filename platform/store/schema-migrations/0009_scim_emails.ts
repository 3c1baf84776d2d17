import type { Kysely } from 'kysely';

/**
 * Every e-mail a SCIM client sent for a user, with its `type` and `primary` (RFC 7643 §2.4); the sign-in e-mail stays
 * in `email`. Null: the user has only that one (created elsewhere, or before this column).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('users').addColumn('scim_emails', 'jsonb').execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('users').dropColumn('scim_emails').execute();
}
