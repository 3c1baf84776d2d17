import type { Kysely } from 'kysely';

/**
 * What a SCIM client sent beyond the columns every part of the service reads (RFC 7643 compared whole): the user's
 * `name` with all six sub-attributes, the enterprise manager's `$ref` and `displayName`, and each group member's
 * `display`, `type`, `$ref` and place in the list. `scim_deleted_at`: the user was deleted through SCIM (RFC 7644
 * §3.6); the record stays, deactivated, for audit and the admin API, and SCIM no longer shows it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('users')
    .addColumn('scim_name', 'jsonb')
    .addColumn('scim_manager', 'jsonb')
    .addColumn('scim_deleted_at', 'timestamptz')
    .execute();
  await db.schema
    .alterTable('scim_group_members')
    .addColumn('position', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('display', 'text')
    .addColumn('type', 'text')
    .addColumn('ref', 'text')
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('scim_group_members')
    .dropColumn('position')
    .dropColumn('display')
    .dropColumn('type')
    .dropColumn('ref')
    .execute();
  await db.schema
    .alterTable('users')
    .dropColumn('scim_name')
    .dropColumn('scim_manager')
    .dropColumn('scim_deleted_at')
    .execute();
}
