import type { NewClientRow } from '../../platform/store/clients';

/** A clients-table row as a test writes it straight into the store: nothing allowed, unless `fields` says so. */
export const storedClientRow = (clientId: string, fields: Partial<NewClientRow> = {}): NewClientRow => ({
  client_id: clientId,
  client_name: null,
  enabled: true,
  settings: JSON.stringify({}),
  allowed_scopes: JSON.stringify([]),
  grant_types: JSON.stringify([]),
  redirect_uris: JSON.stringify([]),
  post_logout_redirect_uris: JSON.stringify([]),
  cors_origins: JSON.stringify([]),
  claims: JSON.stringify([]),
  provisioning_apps: JSON.stringify([]),
  origin: 'api',
  ...fields,
});
