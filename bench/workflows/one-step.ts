import { proxyLocalActivities } from '@temporalio/workflow';
import { STORE } from '../../provisioning/workflows/activity-policies';

/** The activity of the one-step baseline: nothing, so what is measured is the durable workflow around it. */
export interface OneStepActivities {
  nothing(): Promise<void>;
}

const { nothing } = proxyLocalActivities<OneStepActivities>(STORE);

/**
 * The least one durable workflow per attempt costs here: started and awaited like a creation, carrying a payload of the
 * same kind, with a single local activity that does nothing.
 */
export async function oneStep(input: { user: { email: string; firstName: string } }): Promise<{ status: string }> {
  await nothing();
  return { status: input.user.email ? 'provisioned' : 'rejected' };
}
