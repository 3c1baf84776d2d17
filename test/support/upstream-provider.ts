import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import express from 'express';
import Provider from 'oidc-provider';
import { closeServer, listen, listeningUrl } from '../../platform/net/listen';
import { page } from '../../platform/http/html';

export interface UpstreamAccount {
  sub: string;
  email: string;
  given_name?: string;
  family_name?: string;
}

export interface UpstreamProvider {
  url: string;
  /** Who signs in at the next login page. */
  next?: UpstreamAccount;
  close(): Promise<void>;
}

/** The consent step of a test provider without a page: what the client asked for is granted. */
export async function grantAndFinish(
  provider: Provider,
  req: IncomingMessage,
  res: ServerResponse,
  grant: { accountId: string; clientId: string; scope: string },
): Promise<void> {
  const granted = new provider.Grant({ accountId: grant.accountId, clientId: grant.clientId });
  granted.addOIDCScope(grant.scope);
  await provider.interactionFinished(
    req,
    res,
    { consent: { grantId: await granted.save() } },
    { mergeWithLastSubmission: true },
  );
}

export const UPSTREAM_CLIENT = { id: 'identity-service', secret: 'upstream-client-secret' };

/** The admin API's body that registers this upstream provider as Globex, the sign-in provider of `domain`. */
export const globexProvider = (upstream: UpstreamProvider, id: string, domain: string) => ({
  id,
  name: 'Globex',
  authority: upstream.url,
  clientId: UPSTREAM_CLIENT.id,
  clientSecret: UPSTREAM_CLIENT.secret,
  domains: [domain],
});

/**
 * A company's own OpenID provider for the tests: a second oidc-provider on another loopback host (so a browser keeps
 * its cookies apart from the service's), whose login page has one button that signs in `next`.
 */
export async function startUpstreamProvider(host: string, redirectUri: string): Promise<UpstreamProvider> {
  const server = createServer();
  await listen(server, 0, host, 'upstream provider', 'port');
  const url = listeningUrl(server, host);
  const accounts = new Map<string, UpstreamAccount>();
  const provider = new Provider(url, {
    clients: [
      {
        client_id: UPSTREAM_CLIENT.id,
        client_secret: UPSTREAM_CLIENT.secret,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['given_name', 'family_name'] },
    scopes: ['openid', 'email', 'profile'],
    cookies: { keys: ['upstream-cookie-key'] },
    features: { devInteractions: { enabled: false } },
    findAccount: (_ctx, sub) => {
      const account = accounts.get(sub);
      return account && { accountId: sub, claims: () => ({ ...account, email_verified: true }) };
    },
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  });
  const upstream: UpstreamProvider = { url, close: () => closeServer(server) };
  const app = express();
  app.get('/interaction/:uid', async (req, res) => {
    const details = await provider.interactionDetails(req, res);
    if (details.prompt.name === 'login')
      return res
        .type('html')
        .send(
          page(
            'Globex sign-in',
            `<p>Globex's own sign-in page.</p><form method="post" action="/interaction/${details.uid}/login"><button type="submit">Continue as ${upstream.next?.email ?? 'nobody'}</button></form>`,
          ),
        );
    const grant = new provider.Grant({ accountId: details.session!.accountId, clientId: UPSTREAM_CLIENT.id });
    grant.addOIDCScope('openid email profile');
    await provider.interactionFinished(
      req,
      res,
      { consent: { grantId: await grant.save() } },
      { mergeWithLastSubmission: true },
    );
  });
  app.post('/interaction/:uid/login', express.urlencoded({ extended: false }), async (req, res) => {
    const account = upstream.next!;
    accounts.set(account.sub, account);
    await provider.interactionFinished(req, res, { login: { accountId: account.sub } });
  });
  app.use(provider.callback());
  server.on('request', app);
  return upstream;
}
