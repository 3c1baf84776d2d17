import { sql } from 'kysely';
import { logger } from '../../platform/observability/logger';
import { auditEvents } from '../../platform/observability/metrics';
import type { Db } from '../../platform/store/database';

/**
 * Every kind of event the audit trail records, with what it means: one table the recorder, the admin API's `type`
 * filter, the metrics and the documentation share. No event carries a password, code, token or secret.
 */
export const AUDIT_EVENT_TYPES = {
  'sign-in-succeeded': 'a user signed in (detail.method: password, mfa, recovery-code, external, sign-up)',
  'sign-in-failed':
    'a sign-in was refused (detail.reason: unknown-account, wrong-password, no-password, deactivated, locked, wrong-code, sso-required, email-unconfirmed)',
  'locked-out': 'failed attempts locked the account',
  'mfa-enrolled': 'the user turned two-step verification on',
  'mfa-removed': 'two-step verification was turned off (by the user, or by an admin: see actor)',
  'recovery-code-used': 'a recovery code signed the user in (detail.left: how many remain)',
  'recovery-codes-regenerated': 'the user made new recovery codes; the old ones stopped working',
  'password-reset-requested': 'a reset link was asked for (detail.sent: whether a mail went out)',
  'password-reset-completed': 'a reset link set a new password',
  'password-changed': 'the user changed the password on the account page',
  'email-confirmation-sent': 'a confirmation link was mailed',
  'email-confirmed': 'the user confirmed the e-mail address',
  'email-change-requested':
    'the user asked on the account page for another address (detail.sent: whether a link went to it; never the address)',
  'email-changed': "the link mailed to a new address confirmed it as the user's address",
  'profile-changed': 'the user changed their name on the account page',
  'session-ended': 'the user ended one of their sessions on the account page (its refresh tokens and grants too)',
  'sessions-revoked': 'every session, refresh token and grant of the user was ended (by the user or an admin)',
  'account-unlocked': 'an admin cleared the lockout and the failure count',
  'profile-updated': 'an admin changed the user (detail.fields: which fields, never their values)',
  'consent-remembered': 'the user allowed a client and asked that the decision be remembered (detail.scopes)',
  'consent-withdrawn':
    "the user removed an application's access on the account page: its consent, refresh tokens and grants (detail.ended: how many)",
  'source-session-carried-over':
    "the source's authentication cookie opened a session here (detail.sessionId: the source's session id, detail.idp)",
} as const;

export type AuditEventType = keyof typeof AUDIT_EVENT_TYPES;

export interface AuditEvent {
  type: AuditEventType;
  userId?: string;
  clientId?: string;
  clientAddress?: string;
  /** Who acted when not the user: `admin` (an admin API key), `admin:{userId}`, `client:{clientId}`. */
  actor?: string;
  detail?: Record<string, string | number | boolean>;
}

/**
 * Records an event: a row in `audit_events`, a structured log line and a count by type. Recording never fails what
 * the user was doing: a store that cannot take the row leaves the log line, with the reason.
 */
export async function recordAuditEvent(db: Db, event: AuditEvent): Promise<void> {
  auditEvents.inc({ type: event.type });
  const line = {
    audit: event.type,
    userId: event.userId,
    clientId: event.clientId,
    clientAddress: event.clientAddress,
    actor: event.actor,
    ...event.detail,
  };
  try {
    await db
      .insertInto('audit_events')
      .values({
        type: event.type,
        user_id: event.userId ?? null,
        client_id: event.clientId ?? null,
        client_address: event.clientAddress ?? null,
        actor: event.actor ?? null,
        detail: JSON.stringify(event.detail ?? {}),
      })
      .execute();
    logger.info(line, `audit: ${event.type}`);
  } catch (error) {
    logger.warn({ ...line, err: error }, `audit: ${event.type} (not stored: ${(error as Error).message})`);
  }
}

export interface AuditQuery {
  userId?: string;
  type?: AuditEventType;
  /** The id of the last event of the previous page: the next page holds older events. */
  before?: string;
  /** Only events after this time. */
  after?: Date;
  limit: number;
}

/** Events newest first, a page at a time. */
export function listAuditEvents(db: Db, query: AuditQuery) {
  return db
    .selectFrom('audit_events')
    .select(['id', 'at', 'type', 'user_id', 'client_id', 'client_address', 'actor', 'detail'])
    .$if(query.userId !== undefined, (q) => q.where('user_id', '=', query.userId!))
    .$if(query.type !== undefined, (q) => q.where('type', '=', query.type!))
    .$if(query.before !== undefined, (q) => q.where('id', '<', query.before!))
    .$if(query.after !== undefined, (q) => q.where('at', '>', query.after!))
    .orderBy('id', 'desc')
    .limit(query.limit)
    .execute();
}

/** Deletes the events older than `days`; how many went. */
export async function purgeAuditEvents(db: Db, days: number): Promise<number> {
  const result = await db
    .deleteFrom('audit_events')
    .where('at', '<', sql<Date>`now() - make_interval(days => ${days})`)
    .executeTakeFirst();
  return Number(result.numDeletedRows);
}
