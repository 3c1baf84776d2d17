/**
 * Which IdentityServer client configurations the service can honour: the admin API refuses the others, the migration
 * reports them, and the provider's client metadata leaves out what they ask for.
 */

/** The grant types the service offers; IdentityServer's others are named by the migration's dry-run report. */
export const OFFERED_GRANT_TYPES = ['authorization_code', 'client_credentials'] as const;

/**
 * What is wrong with a client that has no secret but the client-credentials grant: it could mint tokens for its
 * scopes without proving anything. IdentityServer's client validation refuses the same shape.
 */
export function publicClientGrantProblem(client: { RequireClientSecret?: boolean; AllowedGrantTypes: string[] }) {
  return client.RequireClientSecret === false && client.AllowedGrantTypes.includes('client_credentials')
    ? 'client_credentials needs a client secret: a client with RequireClientSecret false cannot use it'
    : undefined;
}

/** The grant types of a client the service does not offer (resource-owner password, implicit, hybrid, device…). */
export const unofferedGrantTypes = (grantTypes: string[]) =>
  grantTypes.filter((g) => !(OFFERED_GRANT_TYPES as readonly string[]).includes(g));
