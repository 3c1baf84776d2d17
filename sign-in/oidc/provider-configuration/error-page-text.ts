/**
 * What a person (or the developer of the application) reads when the provider cannot go on: oidc-provider's words,
 * and for the mistakes an integrator makes, what to check.
 */
export function errorPageText(out: { error: string; error_description?: string }, clientId: unknown): string {
  const said = out.error_description ?? out.error;
  const client = typeof clientId === 'string' && clientId.length <= 200 ? `"${clientId}"` : 'it names';
  if (out.error === 'invalid_client')
    return `${said}. This sign-in service does not know the application's client_id ${client}, or the client is disabled: check the client_id the application sends, and that the client exists and is enabled (GET /api/v1/clients/{clientId}).`;
  if (out.error === 'invalid_redirect_uri')
    return `${said}. The application asked to return to an address its client does not list: check its redirect_uri against the client's RedirectUris (exact match, scheme, port and path included).`;
  return said;
}
