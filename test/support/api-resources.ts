import type { Db } from '../../platform/store/database';
import { hashClientSecret } from '../../platform/security/client-secrets';

/**
 * An API resource with one scope and one secret, written as the migration writes IdentityServer's ApiResources,
 * ApiScopes and ApiResourceSecrets (the secret as its SHA-256 digest).
 */
export async function seedApiResource(db: Db, api: { id: string; scope: string; secret: string }): Promise<void> {
  await db
    .insertInto('scopes')
    .values({ name: api.scope, kind: 'api', user_claims: JSON.stringify([]), origin: 'migration' })
    .execute();
  await db
    .insertInto('clients')
    .values({
      client_id: api.id,
      client_name: api.id,
      enabled: true,
      settings: JSON.stringify({ apiResource: true, audience: api.id }),
      allowed_scopes: JSON.stringify([api.scope]),
      grant_types: JSON.stringify([]),
      origin: 'migration',
    } as never)
    .execute();
  await db
    .insertInto('client_secrets')
    .values({
      id: `${api.id}-secret`,
      client_id: api.id,
      value: hashClientSecret(api.secret),
      description: null,
      expiration: null,
    })
    .execute();
}
