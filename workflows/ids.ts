/**
 * Readable, deterministic workflow ids: an operator finds an attempt in the Temporal UI by user and
 * trigger, and a double submit of the same request lands on the same id instead of a second attempt.
 */
export type Trigger = 'admin-api' | 'register' | 'saml' | 'oidc' | 'scim' | 'authorize' | 'retry';

export const creationWorkflowId = (trigger: Trigger, email: string) => `provisioning:${trigger}:${email.trim().toLowerCase()}`;
export const retryWorkflowId = (userId: string) => `provisioning:retry:${userId}`;
export const reactivationWorkflowId = (userId: string) => `provisioning:reactivate:${userId}`;
export const deletionWorkflowId = (userId: string) => `deprovisioning:${userId}`;
export const deactivationWorkflowId = (userId: string) => `deprovisioning:deactivate:${userId}`;
/** A user can be deactivated, reactivated and deactivated again while an earlier round still retries. */
export const appDeprovisioningWorkflowId = (userId: string, parentRunId: string) => `deprovisioning:${userId}:apps@${parentRunId}`;
export const backgroundCancelWorkflowId = (transactionId: string, appId: string) => `cancel:${appId}:${transactionId}`;
