import { metadataOf, type ClientSettings } from '../provider-clients';
import { TO_ACCOUNT, type Onward } from '../sign-in-pages';

/** What the provider's error page shows a person, and the detail for the log line that carries its reference. */
export interface ErrorPageText {
  message: string;
  detail: string;
  onward: Onward;
}

/** The client's ClientUri (IdentityServer's "URI to further information about client") when it is a web address. */
export function clientHome(
  client: { clientId: string; clientName?: string; metadata(): Record<string, unknown> } | undefined,
): Onward | undefined {
  const settings = (client && metadataOf(client))?.['urn:identity-service:settings'] as ClientSettings | undefined;
  const uri = settings?.ClientUri;
  if (typeof uri !== 'string' || !/^https?:\/\//i.test(uri) || !URL.canParse(uri)) return undefined;
  return { href: uri, label: `Back to ${client?.clientName ?? client?.clientId}` };
}

/**
 * When the provider cannot go on: plain words for the person, and for the mistakes an integrator makes, what to check
 * (oidc-provider's words with the fix), which goes to the log under the page's reference, never to the page.
 */
export function errorPageText(
  out: { error: string; error_description?: string },
  clientId: unknown,
  client?: Parameters<typeof clientHome>[0],
): ErrorPageText {
  const said = out.error_description ?? out.error;
  const named = typeof clientId === 'string' && clientId.length <= 200 ? `"${clientId}"` : 'it names';
  const onward = clientHome(client) ?? TO_ACCOUNT;
  if (out.error === 'invalid_client')
    return {
      message:
        'The application you came from is not set up to sign in here. Tell its support, with the reference below.',
      detail: `${said}. This sign-in service does not know the application's client_id ${named}, or the client is disabled: check the client_id the application sends, and that the client exists and is enabled (GET /api/v1/clients/{clientId}).`,
      onward,
    };
  if (out.error === 'invalid_redirect_uri')
    return {
      message:
        'The application you came from asked to return to an address it is not set up for. Tell its support, with the reference below.',
      detail: `${said}. The application asked to return to an address its client does not list: check its redirect_uri against the client's RedirectUris (exact match, scheme, port and path included).`,
      onward,
    };
  return {
    message: 'The sign-in request of the application you came from could not be handled. Go back and try again.',
    detail: `${out.error}: ${said}`,
    onward,
  };
}
