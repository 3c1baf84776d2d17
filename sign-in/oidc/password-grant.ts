import { errors, type KoaContextWithOIDC } from 'oidc-provider';
import type Provider from 'oidc-provider';
import type { AppConfig } from '../../platform/config/config-schema';
import { PASSWORD_GRANT } from '../../platform/config/client-rules';
import { recordAuditEvent } from '../store/audit-events';
import type { Db } from '../../platform/store/database';
import { isSsoDomainEmail } from '../store/sso-provider-configs';
import { claimsOf, type ScopeClaims } from './claims';
import { allowedScopesOf, metadataOf, type ClientSettings } from './provider-clients';
import { checkPassword, overSignInBudget } from './credentials';
import type { SourceReadThrough } from '../source-read-through';
import { formField } from './forms';
import { FIELD_BOUNDS } from '../../platform/security/field-bounds';
import { z } from 'zod';
import { RESOURCE_PREFIX, resourceOfScopes, resourceServer, type ApiResources } from './resources';
import { refuseInvalidScopes } from './provider-configuration/requested-scopes';

export interface PasswordGrantDependencies {
  db: Db;
  config: AppConfig;
  scopes: ScopeClaims;
  apiResources: ApiResources;
  readThrough?: SourceReadThrough;
}

const grantForm = z.object({
  username: formField(FIELD_BOUNDS.email).pipe(z.string().min(1)),
  password: formField(FIELD_BOUNDS.password).pipe(z.string().min(1)),
});

/** Every refusal reads the same to the client, as IdentityServer's `invalid_grant`; the audit trail says why. */
const refused = (description: string) => new errors.InvalidGrant(description);

/**
 * The resource-owner password grant (RFC 6749 §4.3) for the clients migrated with it, so their apps keep signing
 * users in after the cutover. It holds the sign-in pages' rules: the per-address budget, the lockout (attempts are
 * reserved before the hash is checked), one answer for every failed password, the SSO-domain rule, confirmed e-mail
 * where required, and the audit trail; a user with two-step verification is refused, since the grant cannot ask for the
 * code (Duende's default validator does the same only with a custom one; its UI would ask). Tokens are as the code
 * flow issues them (issueTokens).
 */
export function registerPasswordGrant(provider: Provider, deps: PasswordGrantDependencies): void {
  provider.registerGrantType(
    PASSWORD_GRANT,
    async (ctx: KoaContextWithOIDC) => {
      const client = ctx.oidc.client!;
      // Bounded, without NUL, as the sign-in forms take them: the store could not hold anything else.
      const entered = grantForm.safeParse(ctx.oidc.params);
      if (!entered.success) throw new errors.InvalidRequest('username and password are required, within their bounds');
      // Before the password is checked, as Duende's TokenRequestValidator validates the resources first: a request
      // that would be refused anyway spends no sign-in attempt.
      await refuseInvalidScopes(deps, ctx, client);
      const audit: GrantAudit = (type, userId, detail = {}) =>
        recordAuditEvent(deps.db, { type, userId, clientId: client.clientId, clientAddress: ctx.ip, detail });
      const { userId, account } = await authenticate(deps, ctx, entered.data, audit);
      const granted = await grantedScopes(deps, client, (ctx.oidc.params as { scope?: string }).scope);
      const issued = await issueTokens(provider, deps, ctx, { userId, account, ...granted });
      await audit('sign-in-succeeded', userId, { method: 'password', grant: PASSWORD_GRANT });
      ctx.body = {
        access_token: issued.accessToken,
        expires_in: issued.expiresIn,
        token_type: 'Bearer',
        scope: granted.scopes.join(' '),
        ...(issued.refreshToken && { refresh_token: issued.refreshToken }),
        ...(issued.idToken && { id_token: issued.idToken }),
      };
    },
    ['username', 'password', 'scope'],
  );
}

type GrantAudit = (
  type: 'sign-in-failed' | 'sign-in-succeeded' | 'locked-out',
  userId?: string,
  detail?: Record<string, string | number | boolean>,
) => Promise<unknown>;

type Client = NonNullable<KoaContextWithOIDC['oidc']['client']>;
type Account = NonNullable<Awaited<ReturnType<typeof claimsOf>>>;

/** The sign-in pages' rules, in their order; any refusal is `invalid_grant`, and the audit trail says which. */
async function authenticate(
  { db, config, readThrough }: PasswordGrantDependencies,
  ctx: KoaContextWithOIDC,
  entered: z.infer<typeof grantForm>,
  audit: GrantAudit,
): Promise<{ userId: string; account: Account }> {
  if (await overSignInBudget(db, config, ctx.ip))
    throw refused(
      `too many sign-in attempts from this address; retry in ${config.Auth.SignInRateLimit.WindowSeconds} seconds`,
    );
  if (await isSsoDomainEmail(db, entered.username)) {
    await audit('sign-in-failed', undefined, { reason: 'sso-required', grant: PASSWORD_GRANT });
    throw refused("this account signs in through its organization's identity provider");
  }
  const check = await checkPassword(db, config, entered.username, entered.password, readThrough);
  if (check.status !== 'valid') {
    await audit('sign-in-failed', check.userId, { reason: check.reason, grant: PASSWORD_GRANT });
    if (check.lockedNow) await audit('locked-out', check.userId);
    throw refused('invalid username or password');
  }
  if (config.Auth.RequireConfirmedEmail && !check.emailConfirmed) {
    await audit('sign-in-failed', check.userId, { reason: 'email-unconfirmed', grant: PASSWORD_GRANT });
    throw refused('the e-mail address of this account is not confirmed');
  }
  if (check.needsSecondFactor) {
    await audit('sign-in-failed', check.userId, { reason: 'second-factor-required', grant: PASSWORD_GRANT });
    throw refused('two-step verification is on for this account: sign in through the browser');
  }
  const account = await claimsOf(db, check.userId);
  if (!account) throw refused('invalid username or password');
  return { userId: check.userId, account };
}

/** The requested scopes the client is allowed; none requested means all of them, as IdentityServer grants. */
async function grantedScopes(deps: PasswordGrantDependencies, client: Client, scope: string | undefined) {
  const allowed = allowedScopesOf(client);
  const offline = client.grantTypeAllowed('refresh_token');
  const requested = (scope ?? '').split(' ').filter(Boolean);
  const scopes = (requested.length > 0 ? requested : [...allowed, ...(offline ? ['offline_access'] : [])]).filter(
    (s) => allowed.includes(s) || (s === 'offline_access' && offline),
  );
  const identity = scopes.filter((s) => deps.scopes.names.has(s));
  const api = scopes.filter((s) => !deps.scopes.names.has(s));
  const resource = await resourceOfScopes(deps.apiResources, api);
  return { allowed, scopes, identity, api, indicator: resource && `${RESOURCE_PREFIX}${resource}` };
}

type Granted = Awaited<ReturnType<typeof grantedScopes>> & { userId: string; account: Account };

/**
 * The tokens as the code flow issues them: a JWT for the API resources of the requested scopes, a refresh token with
 * offline_access, an ID token with openid.
 */
async function issueTokens(
  provider: Provider,
  deps: PasswordGrantDependencies,
  ctx: KoaContextWithOIDC,
  { userId, account, allowed, scopes, identity, api, indicator }: Granted,
) {
  const client = ctx.oidc.client!;
  const grant = new provider.Grant({ accountId: userId, clientId: client.clientId });
  if (identity.length > 0) grant.addOIDCScope(identity.join(' '));
  if (indicator) grant.addResourceScope(indicator, api.join(' '));
  const grantId = await grant.save();
  const authTime = Math.floor(Date.now() / 1000);
  const signedIn = { amr: ['pwd'], authTime };

  const at = new provider.AccessToken({ accountId: userId, client, grantId, gty: PASSWORD_GRANT });
  if (indicator) {
    at.resourceServer = new provider.ResourceServer(
      indicator,
      await resourceServer(deps.apiResources, indicator, {
        allowedScopes: allowed,
        requestedScopes: api,
        reference:
          (metadataOf(client)['urn:identity-service:settings'] as ClientSettings | undefined)?.AccessTokenType === 1,
      }),
    );
    at.scope = api.join(' ');
  } else {
    at.scope = identity.join(' ');
  }
  // How the user signed in: the token's auth_time, amr and idp (a refreshed token takes them from the refresh token).
  at.extra = { auth_time: authTime, amr: signedIn.amr, idp: 'local' };
  const accessToken = await at.save();

  let refreshToken: string | undefined;
  if (scopes.includes('offline_access')) {
    const rt = new provider.RefreshToken({
      accountId: userId,
      client,
      grantId,
      gty: PASSWORD_GRANT,
      scope: scopes.join(' '),
      resource: indicator,
      rotations: 0,
      ...signedIn,
    });
    refreshToken = await rt.save();
  }

  let idToken: string | undefined;
  if (identity.includes('openid')) {
    const token = new provider.IdToken(
      { ...account.claims(), amr: ['pwd'], auth_time: authTime, idp: 'local' },
      { ctx },
    );
    // The claims the granted identity scopes release (IdToken's scope is not in oidc-provider's types).
    (token as unknown as { scope: string }).scope = grant.getOIDCScopeFiltered(new Set(identity));
    idToken = await token.issue({ use: 'idtoken' });
  }
  return { accessToken, expiresIn: at.expiration, refreshToken, idToken };
}
