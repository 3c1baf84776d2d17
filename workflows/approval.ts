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
