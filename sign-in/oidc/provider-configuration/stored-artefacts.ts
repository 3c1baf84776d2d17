import { createPostgresAdapter, findById, isStorableKey, withConsumed } from '../adapter';
import { clientMetadata, SECRET_HASHES } from '../provider-clients';
import { ADMIN_PAGES_CLIENT_ID, adminPagesClientMetadata } from '../admin-pages';
import { adoptMigratedRefreshToken } from '../migrated-refresh-tokens';
import { resourceOfScopes } from '../resources';
import type { ProviderDependencies } from './provider-dependencies';

/**
 * Every artefact in PostgreSQL; clients from the clients store (and the admin pages' built-in one), and refresh tokens the migration carried over (or,
 * during the read-through window, the source still holds) adopted when first presented.
 */
export function providerAdapter({
  db,
  clients,
  ring,
  issuer,
  scopes,
  apiResources,
  readThrough,
}: ProviderDependencies) {
  const stored = createPostgresAdapter(db);
  return createPostgresAdapter(db, {
    Client: {
      async find(id: string) {
        // The admin pages' own client is built in: a stored client of the same id never takes its place.
        if (id === ADMIN_PAGES_CLIENT_ID) return adminPagesClientMetadata(issuer);
        if (!isStorableKey(id)) return undefined;
        const row = await clients.find(id);
        // An API resource is a client only to authenticate at introspection: it has no grant type and no response
        // type, so the token and authorization endpoints refuse it.
        return row && row.enabled
          ? { ...clientMetadata(row, scopes.names), [SECRET_HASHES]: row.live_secrets }
          : undefined;
      },
    },
    RefreshToken: {
      async find(id: string) {
        if (!isStorableKey(id)) return undefined;
        const { row, alsoFoundAs } = await findById(db, 'RefreshToken', id);
        if (row) return withConsumed(row);
        // Found as an access or client-credentials token of this service (introspection tries all three at once):
        // not a handle the migration carried over.
        if (alsoFoundAs.length > 0) return undefined;
        const adoption = {
          db,
          ring,
          refreshTokens: stored('RefreshToken'),
          grants: stored('Grant'),
          identityScopes: scopes.names,
          resourceOf: (requested: string[]) => resourceOfScopes(apiResources, requested),
        };
        return (
          // During the read-through window a token the sweep carried over is adopted only while the source holds it live.
          (await adoptMigratedRefreshToken({ ...adoption, liveAtSource: readThrough?.liveAtSource }, id)) ??
          // During the read-through window, a token the source rotated after the last sweep is carried over now.
          ((await readThrough?.refreshToken(id)) ? await adoptMigratedRefreshToken(adoption, id) : undefined)
        );
      },
    },
  });
}
