import { randomUUID } from 'node:crypto';
import { hashPassword } from '../passwords/native';
import type { Db } from '../store/database';
import { discardPasswordHash, stashPasswordHash } from '../store/pending-credentials';
import type { NewUser } from '../store/users';
import { creationWorkflowId, type Trigger } from '../workflows/ids';
import { createUserAndProvision, type CreationOutcome } from '../workflows/provisioning';
import { ResultDeadlineError, type WorkflowRunner } from './workflow-runner';

export interface CreationRequest {
  trigger: Trigger;
  user: Omit<NewUser, 'userId'>;
  password?: string;
}

/**
 * Every creation path goes through here: the password is hashed in the API and handed over through the store,
 * so neither it nor its hash ever enters workflow history; then the creation workflow runs and is waited for.
 */
export async function createUserThroughWorkflow({ db, run }: { db: Db; run: WorkflowRunner }, request: CreationRequest): Promise<CreationOutcome> {
  const credentialRef = request.password === undefined ? undefined : await stashPasswordHash(db, await hashPassword(request.password));
  try {
    return await run(createUserAndProvision, {
      workflowId: creationWorkflowId(request.trigger, request.user.email),
      onRunning: 'fail',
      args: [{ trigger: request.trigger, credentialRef, user: { ...request.user, userId: randomUUID() } }],
    });
  } catch (error) {
    // Past the deadline the workflow may still need the credential; otherwise nothing will consume it.
    if (credentialRef && !(error instanceof ResultDeadlineError)) await discardPasswordHash(db, credentialRef);
    throw error;
  }
}
