import type { SignOutNotice } from '../store/schema';

/**
 * Back-channel logout's workflow, as the domains that start it name it: sign-in runs it (sign-in/workflows/
 * notify-sign-out.ts) and starts it when a session ends; provisioning's removals start it as their child, by this
 * type name, since a domain imports no other's workflow code. Workflow code only: types and constants.
 */
export const NOTIFY_SIGN_OUT = 'notifySignOut';

export interface SignOutInput {
  /** The issuer the client's ID tokens named (Api:PublicUrl): the logout token's `iss`. */
  issuer: string;
  userId: string;
  notices: SignOutNotice[];
}

/**
 * A sign-out's notices to clients: one workflow per event (a session ended, a user signed out everywhere, a user
 * removed). No personal data, as every workflow id (provisioning/workflows/ids.ts).
 */
export const signOutWorkflowId = (userId: string, eventId: string) => `sign-out:${userId}:${eventId}`;
