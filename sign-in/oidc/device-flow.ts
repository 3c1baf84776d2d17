import { createHash } from 'node:crypto';
import type { Request } from 'express';
import type Provider from 'oidc-provider';
import type { Configuration, KoaContextWithOIDC } from 'oidc-provider';
import type { AppConfig } from '../../platform/config/config-schema';
import { OIDC_ROUTES } from '../sign-in-paths';
import type { Db } from '../../platform/store/database';
import { countHit } from '../../platform/store/rate-limits';
import { findScopeTexts } from '../store/sign-in-users';
import {
  deviceCodeLimitPage,
  deviceCodePage,
  deviceConfirmPage,
  deviceDonePage,
  deviceStartAgainPage,
} from './sign-in-pages';

type DeviceFlow = NonNullable<NonNullable<Configuration['features']>['deviceFlow']>;

/** How the confirmation names the scopes the device asks for: each scope's DisplayName, as on the consent page. */
async function scopesShown(db: Db, ctx: KoaContextWithOIDC): Promise<string[]> {
  const code = ctx.oidc.entities.DeviceCode as { params?: { scope?: unknown } } | undefined;
  const names = typeof code?.params?.scope === 'string' ? code.params.scope.split(' ').filter(Boolean) : [];
  const texts = new Map((await findScopeTexts(db, names)).map((t) => [t.name, t.display_name]));
  return names.map((name) => texts.get(name) || name);
}

/**
 * The device flow (RFC 8628) for clients with the device_code grant, its pages in the sign-in pages' layout. The
 * confirmation names the client and every scope being granted, so a person tricked into entering an attacker's code
 * sees what they would hand over (RFC 8628 §5.4).
 */
export function deviceFlowFeature(db: Db): DeviceFlow {
  return {
    enabled: true,
    charset: 'base-20',
    mask: '****-****',
    userCodeInputSource: (ctx, form, _out, err) => {
      ctx.type = 'html';
      ctx.body = deviceCodePage(
        form,
        err ? 'That code is not right, or it expired; enter the code the device shows now.' : undefined,
      );
    },
    userCodeConfirmSource: async (ctx, form, client, _deviceInfo, userCode) => {
      const scopes = await scopesShown(db, ctx);
      ctx.type = 'html';
      ctx.body = deviceConfirmPage(form, client.clientName ?? client.clientId, userCode, scopes);
    },
    successSource: (ctx) => {
      ctx.type = 'html';
      ctx.body = deviceDonePage(ctx.oidc.client?.clientName ?? ctx.oidc.client?.clientId ?? 'The device');
    },
  };
}

/**
 * Every user code typed at /device is a guess at a short secret, and RFC 8628 §5.1 asks the server to rate-limit
 * their entry: each submission spends a budget of its browser session and one of its client address
 * (Auth:UserCodeRateLimit), both counted in the store so every API process spends the same ones; past either the
 * code is not looked up (429).
 * A post without a session that holds the page's anti-forgery state (none, expired, or already used) gets a page
 * saying to start again: oidc-provider would otherwise fail on saving a session it never stored (500).
 */
export function userCodeBudget(provider: Provider, db: Db, config: AppConfig) {
  const { PermitLimit, AddressPermitLimit, WindowSeconds } = config.Auth.UserCodeRateLimit;
  return async (ctx: KoaContextWithOIDC, next: () => Promise<void>) => {
    if (ctx.path !== OIDC_ROUTES.code_verification || ctx.method !== 'POST') return next();
    const session = await provider.Session.get(ctx);
    if (!(session.state as { secret?: unknown } | undefined)?.secret) {
      ctx.status = 400;
      ctx.type = 'html';
      ctx.body = deviceStartAgainPage();
      return;
    }
    // The address Express derived under Api:TrustedProxies (Koa believes X-Forwarded-For only behind https).
    const address = (ctx.req as Request).ip ?? ctx.ip;
    const sessionKey = createHash('sha256').update(session.jti).digest('base64url');
    const [byAddress, bySession] = await Promise.all([
      countHit(db, 'user-code:address', address, WindowSeconds),
      countHit(db, 'user-code:session', sessionKey, WindowSeconds),
    ]);
    if (byAddress <= AddressPermitLimit && bySession <= PermitLimit) return next();
    ctx.status = 429;
    ctx.set('Retry-After', String(WindowSeconds));
    ctx.type = 'html';
    ctx.body = deviceCodeLimitPage(WindowSeconds);
  };
}
