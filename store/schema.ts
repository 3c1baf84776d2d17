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

export interface Database {
  users: UsersTable;
  user_provisions: UserProvisionsTable;
  pending_credentials: PendingCredentialsTable;
}

export type UserRow = Selectable<UsersTable>;
export type NewUserRow = Insertable<UsersTable>;
export type UserUpdate = Updateable<UsersTable>;
