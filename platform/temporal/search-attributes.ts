import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';

/**
 * How an operator finds a user's workflows in the Temporal UI (`UserId = "…"`): ids and outcomes only, never personal
 * data, since the cluster stores search attributes in plain text. Registered by the embedded dev server at start and
 * by the compose file's setup; the API and the worker check for them at start.
 */
export const USER_ID = defineSearchAttributeKey('UserId', SearchAttributeType.KEYWORD);
export const PROVISIONING_TRIGGER = defineSearchAttributeKey('ProvisioningTrigger', SearchAttributeType.KEYWORD);
export const PROVISIONING_OUTCOME = defineSearchAttributeKey('ProvisioningOutcome', SearchAttributeType.KEYWORD);

export const SEARCH_ATTRIBUTES = [USER_ID, PROVISIONING_TRIGGER, PROVISIONING_OUTCOME];

/** A child's UserId, its parent's (when it has one), so a user's background workflows show with its attempts. */
export function userIdOfParent() {
  const userId = workflowInfo().typedSearchAttributes.get(USER_ID);
  return userId === undefined ? [] : [{ key: USER_ID, value: userId }];
}

/**
 * The workflow's ending, set as its last step. Only where the workflow was started with the service's UserId: the
 * cluster then knows the attributes (it refuses a start with unknown ones, but would fail every later task on an
 * unknown upsert).
 */
export function recordOutcome(outcome: string): void {
  // Shown as the run's current details in the Temporal UI: a refused creation reads "Outcome: rejected" there, not
  // only as a green "Completed".
  setCurrentDetails(`Outcome: ${outcome}`);
  if (workflowInfo().typedSearchAttributes.get(USER_ID) === undefined) return;
  upsertSearchAttributes([{ key: PROVISIONING_OUTCOME, value: outcome }]);
}
