import { z } from 'zod';
import { appIdSchema, provisioningAppSchema } from '../../platform/config/config-schema';
import { callbackUrlProblem, type AllowList } from '../../platform/security/callback-address';
import type { ProvisioningApp } from '../store/provisioning-apps';
import { validationProblem, type Problem } from '../../platform/http/problem';

/** The configuration's field names (`CallbackUrl`), with camelCase (`callbackUrl`) accepted too. */
export const appBodySchema = z.preprocess(
  (body) =>
    body && typeof body === 'object' && !Array.isArray(body)
      ? Object.fromEntries(
          Object.entries(body).map(([k, v]) => [k === 'appId' ? k : k.charAt(0).toUpperCase() + k.slice(1), v]),
        )
      : body,
  provisioningAppSchema.extend({ appId: appIdSchema.optional(), CallbackUrl: z.url() }).strict(),
);

export const refusedAddress = (reason: string): Problem => ({
  status: 400,
  title: 'Refused callback address',
  detail: `CallbackUrl: refused: ${reason}`,
});

/**
 * An app as a POST or PUT body gives it: the app id from the path (a PUT's, which a body's own must match) or the
 * body, and a callback address the allow-list lets the service call.
 */
export function parseApp(
  allow: AllowList,
  body: unknown,
  pathAppId?: string,
): { app: ProvisioningApp } | { problem: Problem } {
  const parsed = appBodySchema.safeParse(body);
  if (!parsed.success) return { problem: validationProblem(parsed.error) };
  const appId = pathAppId ?? parsed.data.appId;
  if (!appId) return { problem: { status: 400, title: 'Invalid request', detail: 'appId: required' } };
  if (pathAppId && parsed.data.appId && parsed.data.appId !== pathAppId) {
    return {
      problem: {
        status: 400,
        title: 'Invalid request',
        detail: `appId: the body says ${parsed.data.appId}, the path ${pathAppId}`,
      },
    };
  }
  const refused = callbackUrlProblem(parsed.data.CallbackUrl, allow);
  if (refused) return { problem: refusedAddress(refused) };
  return {
    app: {
      appId,
      callbackUrl: parsed.data.CallbackUrl,
      apiKey: parsed.data.ApiKey,
      tryTimeoutSeconds: parsed.data.TryTimeoutSeconds,
    },
  };
}
