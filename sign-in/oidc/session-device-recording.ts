import type { Request } from 'express';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { logger } from '../../platform/observability/logger';
import type { Db } from '../../platform/store/database';
import { recordSessionDevice } from '../store/session-devices';

/**
 * oidc-provider's `authorization.success`: the session that authorized a client is recorded with where it came from
 * (the client address Express derived under Api:TrustedProxies, and the User-Agent), for the account page's list of
 * sign-ins. At a sign-in the session has its new id by then (oidc-provider renews it at resume). A failed record is
 * logged and the sign-in goes on: the page then shows the session without its device.
 */
export const recordDeviceOfSession = (db: Db) => (ctx: KoaContextWithOIDC) => {
  const session = ctx.oidc.session;
  const userId = session?.accountId;
  if (!session || !userId) return;
  const req = ctx.req as Partial<Request>;
  recordSessionDevice(db, {
    sessionId: session.jti,
    userId,
    clientAddress: req.ip ?? ctx.ip,
    userAgent: ctx.get('user-agent') || undefined,
  }).catch((error: Error) => logger.warn(`sign-in: the device of a session was not recorded: ${error.message}`));
};
