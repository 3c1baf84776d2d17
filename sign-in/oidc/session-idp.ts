import { Provider, type KoaContextWithOIDC } from 'oidc-provider';

/**
 * The identity provider a session's sign-in happened at, kept where oidc-provider keeps `amr`: on the session, then on
 * each code, device code and refresh token made from it (and on each rotated refresh token), so the tokens issued
 * later carry the same `idp` (token-shape.ts). Only a carried-over source session sets it (source-sessions.ts): the
 * source's `idp` claim, which Duende sets to "local" or the external scheme's name. Without it `idp` is derived from
 * `amr` as before. oidc-provider keeps only the fields a model lists in IN_PAYLOAD, so `idp` is added to those lists.
 */
const MODELS = ['Session', 'AuthorizationCode', 'DeviceCode', 'BackchannelAuthenticationRequest', 'RefreshToken'];
const TOKEN_MODELS = ['AuthorizationCode', 'DeviceCode', 'BackchannelAuthenticationRequest', 'RefreshToken'];

interface WithIdp {
  idp?: string;
}

/** The idp of what this request builds on: the code or refresh token it redeems, else the browser's session. */
export function carriedIdpOf(ctx: KoaContextWithOIDC | undefined): string | undefined {
  const entities = ctx?.oidc?.entities as Record<string, WithIdp | undefined> | undefined;
  if (!entities) return undefined;
  const sources = [
    entities.AuthorizationCode,
    entities.RotatedRefreshToken,
    entities.RefreshToken,
    entities.DeviceCode,
    entities.BackchannelAuthenticationRequest,
    entities.Session,
  ];
  return sources.find((source) => typeof source?.idp === 'string')?.idp;
}

export function carrySessionIdp(provider: Provider): void {
  const models = provider as unknown as Record<string, { IN_PAYLOAD: string[]; prototype: object }>;
  for (const name of MODELS) {
    const model = models[name];
    const listed = model.IN_PAYLOAD;
    Object.defineProperty(model, 'IN_PAYLOAD', { get: () => [...listed, 'idp'], configurable: true });
  }
  for (const name of TOKEN_MODELS) {
    const prototype = models[name].prototype as WithIdp & { save: (this: WithIdp, ttl?: number) => Promise<string> };
    const save = prototype.save;
    prototype.save = function saveWithIdp(this: WithIdp, ttl?: number) {
      if (this.idp === undefined) {
        const idp = carriedIdpOf((Provider as unknown as { ctx?: KoaContextWithOIDC }).ctx);
        if (idp !== undefined) this.idp = idp;
      }
      return save.call(this, ttl);
    };
  }
  // A sign-in at the service's own pages replaces the session's login, and with it the carried-over idp.
  const session = models.Session.prototype as WithIdp & { loginAccount: (this: WithIdp, details: object) => void };
  const loginAccount = session.loginAccount;
  session.loginAccount = function loginAccountWithoutIdp(this: WithIdp, details: object) {
    delete this.idp;
    loginAccount.call(this, details);
  };
}
