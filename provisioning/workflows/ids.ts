/**
 * Workflow ids carry no personal data: a Temporal cluster is often run, backed up or hosted elsewhere. An operator
 * finds a user's attempts by user id. Every provisioning attempt for a user (creation, retry, reactivation) has the
 * same id, so at most one runs per user at a time; the API keeps one creation per e-mail with a store reservation.
 */
export type Trigger = 'admin-api' | 'register' | 'saml' | 'oidc' | 'scim' | 'authorize' | 'retry';

export const provisioningWorkflowId = (userId: string) => `provisioning:${userId}`;
export const deletionWorkflowId = (userId: string) => `deprovisioning:${userId}`;
export const deactivationWorkflowId = (userId: string) => `deprovisioning:deactivate:${userId}`;
/** A user can be deactivated, reactivated and deactivated again while an earlier round still retries. */
export const appDeprovisioningWorkflowId = (userId: string, parentRunId: string) =>
  `deprovisioning:${userId}:apps@${parentRunId}`;
export const backgroundCancelWorkflowId = (transactionId: string, appId: string) => `cancel:${appId}:${transactionId}`;
