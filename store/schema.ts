import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

/** The kysely view of the service's PostgreSQL stores; one interface per table, named after the spec's store. */
export interface UsersTable {
  id: string;
  email: string;
  normalized_email: string;
  user_name: string;
  normalized_user_name: string;
  first_name: string | null;
  last_name: string | null;
  company_name: string | null;
  organization_id: string | null;
  custom_attributes: ColumnType<Record<string, string>, string, string>;
  password_hash: string | null;
  external_id: string | null;
  active: Generated<boolean>;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface UserProvisionsTable {
  user_id: string;
  app_id: string;
  transaction_id: string;
  provisioned_at: Generated<Date>;
}

/**
 * Password hashes wait here between the API (which hashes) and the create-user activity (which
 * moves them onto the user row), so no hash ever travels through workflow history.
 */
export interface PendingCredentialsTable {
  id: string;
  password_hash: string;
  created_at: Generated<Date>;
}

/** SCIM bearer tokens, stored as SHA-256 digests: the token itself is shown once, at creation. */
export interface ScimTokensTable {
  id: string;
  token_hash: string;
  description: string | null;
  created_at: Generated<Date>;
  last_used_at: Date | null;
}

export interface ScimGroupsTable {
  id: string;
  display_name: string;
  normalized_display_name: string;
  external_id: string | null;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface ScimGroupMembersTable {
  group_id: string;
  user_id: string;
}

/** Apps of the store-backed provider (Provisioning:AppProvider = Store). */
export interface ProvisioningAppsTable {
  app_id: string;
  callback_url: string;
  api_key: string;
  try_timeout_seconds: number;
  created_at: Generated<Date>;
  updated_at: Generated<Date>;
}

export interface Database {
  users: UsersTable;
  user_provisions: UserProvisionsTable;
  pending_credentials: PendingCredentialsTable;
  scim_tokens: ScimTokensTable;
  scim_groups: ScimGroupsTable;
  scim_group_members: ScimGroupMembersTable;
  provisioning_apps: ProvisioningAppsTable;
}

export type UserRow = Selectable<UsersTable>;
export type NewUserRow = Insertable<UsersTable>;
export type UserUpdate = Updateable<UsersTable>;
