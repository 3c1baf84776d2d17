import type { Response } from 'got';
import { z } from 'zod';
import { safeStringMap } from '../../platform/security/object-keys';
import { storableText, textProblemMessage } from '../../platform/security/storable-text';
import { isReservedClaim, reservedClaimMessage } from '../../platform/security/reserved-claims';
import { FIELD_BOUNDS } from '../../platform/security/field-bounds';
import { reasons, type TryVerdict } from '../tcc';
import type { ProvisioningApp } from './app-providers';

export const tryResponseSchema = z.object({
  approved: z.boolean(),
  reason: z.string().optional(),
  organizationId: z.string().min(1).optional(),
  customAttributes: z.record(z.string(), z.string()).optional(),
});

/** The most of an app's rejection reason that is kept: it travels to the caller, in histories and in logs. */
export const MAX_REASON_LENGTH = 500;
/** Bounds of what a Try answer may set, as the admin API's own (api/routes/profile.ts). */
const ANSWER_BOUNDS = {
  organizationId: FIELD_BOUNDS.id,
  attributeName: FIELD_BOUNDS.attributeName,
  attributeValue: FIELD_BOUNDS.attributeValue,
};

/** An app's reason as the caller gets it: what the store can hold, at most MAX_REASON_LENGTH characters. */
function boundedReason(reason: string | undefined): string | undefined {
  if (reason === undefined) return undefined;
  const storable = storableText(reason);
  return storable.length > MAX_REASON_LENGTH ? `${storable.slice(0, MAX_REASON_LENGTH - 1)}…` : storable;
}

/** What the store cannot hold in one value: its text, or its length past the field's bound. */
const problemOf = (text: string, max: number) =>
  textProblemMessage(text) ?? (text.length > max ? `is longer than ${max} characters` : undefined);

/** What in an approval the store could not hold, named for the refusal; undefined when all of it fits. */
function unstorable(verdict: { organizationId?: string; customAttributes?: Record<string, string> }) {
  const { organizationId, customAttributes = {} } = verdict;
  const organization = organizationId && problemOf(organizationId, ANSWER_BOUNDS.organizationId);
  if (organization) return `organizationId ${organization}`;
  for (const [name, value] of Object.entries(customAttributes)) {
    const nameProblem = problemOf(name, ANSWER_BOUNDS.attributeName);
    if (nameProblem) return `a customAttributes name ${nameProblem}`;
    const valueProblem = problemOf(value, ANSWER_BOUNDS.attributeValue);
    if (valueProblem) return `customAttributes.${name} ${valueProblem}`;
  }
  return undefined;
}

/** The answer's body in the Try response's shape, attributes no user may carry dropped (and `warn`ed); undefined when it is not one. */
function parseTryBody(app: ProvisioningApp, text: string, warn: (message: string) => void) {
  try {
    const body = JSON.parse(text) as { customAttributes?: unknown } | null;
    const attributes = body?.customAttributes;
    // Only a map is read as one (an array would become {"0": …}); anything else fails the Try response's shape.
    if (attributes && typeof attributes === 'object' && !Array.isArray(attributes)) {
      // Names no attribute may have (a prototype's) and names of claims the service sets itself are dropped.
      body.customAttributes = safeStringMap(
        attributes as Record<string, string>,
        (key, reason) =>
          warn(
            reason
              ? `app ${app.appId} answered Try with the attribute "${key}": ${reason}; it was dropped`
              : `app ${app.appId} answered Try with the attribute name "${key}", which is not allowed; it was dropped`,
          ),
        (key) => (isReservedClaim(key) ? reservedClaimMessage(key) : undefined),
      );
    }
    const parsed = tryResponseSchema.safeParse(body);
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The verdict an app's answer to Try gives: anything but a well-formed, storable approval is a refusal. */
export function interpretTry(
  app: ProvisioningApp,
  response: Response<string>,
  warn: (message: string) => void,
): TryVerdict {
  if (response.statusCode < 200 || response.statusCode >= 300) {
    return { approved: false, reason: reasons.tryFailed(app.appId, `answered HTTP ${response.statusCode}`) };
  }
  const answer = parseTryBody(app, response.body, warn);
  if (!answer)
    return { approved: false, reason: reasons.tryFailed(app.appId, 'answered a body that is not a Try response') };
  const { approved, reason, organizationId, customAttributes } = answer;
  if (!approved)
    return {
      approved: false,
      reason: boundedReason(reason) ?? reasons.rejectedWithoutReason(app.appId),
    };
  // An approval the store cannot hold is a refusal now, naming the app and the field, not a write retried forever.
  const problem = unstorable({ organizationId, customAttributes });
  if (problem) return { approved: false, reason: reasons.unstorableApproval(app.appId, problem) };
  return { approved: true, organizationId, customAttributes };
}
