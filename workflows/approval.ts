import type { UserProfile } from '../store/users';

/** What an app's approved Try hands back: the spec's organization and attribute assignments. */
export interface Approval {
  appId: string;
  organizationId?: string;
  customAttributes?: Record<string, string>;
}

/**
 * Spec rules: an organization is applied only when the user has none; attributes merge key by key. Workflow-safe (the
 * workflow folds the confirmed approvals with it) and used by the Try round, where a later app sees earlier ones.
 */
export function applyApproval(user: UserProfile, approval: Approval): UserProfile {
  return {
    ...user,
    organizationId: user.organizationId ?? approval.organizationId ?? null,
    customAttributes: { ...user.customAttributes, ...approval.customAttributes },
  };
}

/** Only what confirmed apps assigned reaches the store, and only when it changed anything. */
export function assignedChanges(before: UserProfile, after: UserProfile) {
  const unchanged =
    before.organizationId === after.organizationId &&
    JSON.stringify(before.customAttributes) === JSON.stringify(after.customAttributes);
  return unchanged ? undefined : { organizationId: after.organizationId, customAttributes: after.customAttributes };
}

/** What the apps that confirmed assigned, folded in their order: what the store records with their provisions. */
export const assignedBy = (user: UserProfile, confirmed: Approval[]) =>
  assignedChanges(user, confirmed.reduce(applyApproval, user));
