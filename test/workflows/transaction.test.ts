import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import type { ProvisioningActivities } from '../../provisioning/activities/provisioning-activities';
import type { TryVerdict } from '../../provisioning/apps/tcc-client';
import { findTemporalTestServer } from '../../dev/temporal-cli';
import type { UserProfile } from '../../platform/store/users';
import { createUserAndProvision } from '../../provisioning/workflows/provisioning';
import { newUserFrom } from '../../provisioning/creation';

/**
 * The spec's provisioning state table, one case a row, against the workflow code with stub activities on the
 * time-skipping test server: no HTTP, no store, no waiting. The real-HTTP timeouts are tested in the integration tests.
 */
/** How a stub app answers; a Try that `stalls` fails as a step (its backstop on a stuck worker) instead of answering. */
type AppBehaviour = { verdict?: TryVerdict | 'stalls'; confirm?: 'ok' | 'fail'; cancel?: 'ok' | 'fail' };

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: findTemporalTestServer() } },
  });
}, 120_000);
afterAll(async () => {
  await env?.teardown();
});

/** Faults of a step rather than of an app's answer: the user deleted meanwhile, the records' store write. */
type StepFaults = {
  userGone?: boolean;
  /** The records' step fails this many times before it lands. */
  recordFailures?: number;
  /** The first step is run again (a replay) and finds these apps' records, written by its first run. */
  heldBy?: string[];
};

function stubs(apps: Record<string, AppBehaviour>, faults: StepFaults) {
  const calls: string[] = [];
  const records = new Set<string>(faults.heldBy);
  const triedWith: Record<string, UserProfile> = {};
  let assigned: unknown;
  let user: UserProfile | undefined;
  let recordFailures = faults.recordFailures ?? 0;
  const appRefs = Object.keys(apps).map((appId) => ({ appId, tryTimeoutSeconds: 60 }));
  const activities: Partial<ProvisioningActivities> = {
    createUserWithApps: (input) => {
      calls.push('createUser');
      user = { ...input.user, active: true };
      return Promise.resolve({
        status: 'created' as const,
        user,
        apps: appRefs,
        unknownAppIds: [],
        provisionedApps: [...records].sort(),
      });
    },
    tryApp: ({ appId, user: triedUser }) => {
      calls.push(`try ${appId}`);
      triedWith[appId] = triedUser;
      const verdict = apps[appId].verdict ?? { approved: true };
      if (verdict === 'stalls') return Promise.reject(ApplicationFailure.nonRetryable('the worker stalled'));
      return Promise.resolve(verdict);
    },
    confirmApp: ({ appId }) => {
      calls.push(`confirm ${appId}`);
      if (apps[appId].confirm === 'fail') return Promise.reject(ApplicationFailure.nonRetryable('answered HTTP 500'));
      return Promise.resolve();
    },
    recordAndFinish: (input) => {
      if (recordFailures-- > 0) {
        calls.push('record fails');
        return Promise.reject(new Error('the store is away'));
      }
      calls.push('record');
      if (faults.userGone && input.confirmedApps.length > 0) return Promise.resolve({ recorded: false as const });
      for (const appId of input.confirmedApps) records.add(appId);
      assigned = input.assigned;
      return Promise.resolve({ recorded: true as const, user: input.user, provisionedApps: [...records].sort() });
    },
    cancelApp: (input) => {
      calls.push(`cancel ${input.appId}`);
      if (apps[input.appId].cancel === 'fail') throw ApplicationFailure.retryable('answered HTTP 503');
      return Promise.resolve();
    },
    deleteUser: () => {
      calls.push('deleteUser');
      user = undefined;
      return Promise.resolve({ deleted: true, appIds: [], signOuts: [] });
    },
    discardCredential: () => {
      calls.push('discardCredential');
      return Promise.resolve();
    },
  };
  return { activities, calls, records, triedWith, assigned: () => assigned, userExists: () => user !== undefined };
}

async function attempt(apps: Record<string, AppBehaviour>, faults: StepFaults = {}, credentialRef?: string) {
  const stub = stubs(apps, faults);
  const taskQueue = `wf-${randomUUID()}`;
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    activities: stub.activities,
    workflowBundle: { codePath: process.env.TEST_WORKFLOW_BUNDLE! },
  });
  const userId = randomUUID();
  const outcome = await worker.runUntil(
    env.client.workflow.execute(createUserAndProvision, {
      taskQueue,
      workflowId: `provisioning:${userId}`,
      args: [
        {
          trigger: 'admin-api',
          user: { userId, ...newUserFrom({ email: `${userId}@example.test` }) },
          credentialRef,
        },
      ],
    }),
  );
  return { outcome, workflowId: `provisioning:${userId}`, ...stub };
}

/** The calls of one kind to the apps named by the letters, in that order: `each('try', 'ab')`. */
const each = (call: string, appIds: string) => [...appIds].map((appId) => `${call} ${appId}`);

describe('the provisioning state table, row by row', () => {
  const create = attempt;

  test('Start → Trying → Confirming → Provisioned: every app approves and confirms, one record per app', async () => {
    const run = await create({ a: {}, b: {}, c: {} });
    expect(run.outcome).toMatchObject({ status: 'provisioned', confirmedApps: ['a', 'b', 'c'] });
    expect(run.calls).toEqual(['createUser', ...each('try', 'abc'), ...each('confirm', 'abc'), 'record']);
    expect([...run.records].sort()).toEqual(['a', 'b', 'c']);
    expect(run.userExists()).toBe(true);
  });

  test('Trying → Cancelling: a rejection cancels the apps whose Try succeeded, deletes the new user, carries the reason', async () => {
    const run = await create({ a: {}, b: { verdict: { approved: false, reason: 'no seats' } }, c: {} });
    expect(run.outcome).toMatchObject({ status: 'rejected', appId: 'b', reason: 'no seats', userDeleted: true });
    expect(run.calls).toEqual(['createUser', 'try a', 'try b', 'cancel a', 'deleteUser']);
    expect(run.records.size).toBe(0);
    expect(run.userExists()).toBe(false);
  });

  test('Confirming → Partially confirmed: records for the apps that confirmed, the waiting ones cancelled, the user kept', async () => {
    const run = await create({ a: {}, b: { confirm: 'fail' }, c: {} });
    expect(run.outcome).toMatchObject({
      status: 'partially-confirmed',
      confirmedApps: ['a'],
      unconfirmedApps: ['b', 'c'],
    });
    expect(run.calls).toEqual([
      'createUser',
      ...each('try', 'abc'),
      ...each('confirm', 'ab'),
      'record',
      ...each('cancel', 'bc'),
    ]);
    expect([...run.records]).toEqual(['a']);
    expect(run.userExists()).toBe(true);
  });

  test('the first Confirm failing leaves no app holding the user: all cancelled, the user deleted', async () => {
    const run = await create({ a: { confirm: 'fail' }, b: {} });
    expect(run.outcome).toMatchObject({ status: 'rejected', appId: 'a', userDeleted: true });
    expect(run.calls).toEqual(['createUser', 'try a', 'try b', 'confirm a', 'cancel a', 'cancel b', 'deleteUser']);
    expect(run.userExists()).toBe(false);
  });

  test('the first Confirm failing in a run again of an attempt whose first run had an app confirm keeps the user that app holds', async () => {
    const run = await create({ b: { confirm: 'fail' }, c: {} }, { heldBy: ['a'] });
    expect(run.outcome).toMatchObject({
      status: 'partially-confirmed',
      appId: 'b',
      confirmedApps: ['a'],
      unconfirmedApps: ['b', 'c'],
    });
    expect(run.calls).not.toContain('deleteUser');
    expect(run.userExists()).toBe(true);
  });

  test('Cancelling → Ended: a failing Cancel does not change the answer; a detached workflow keeps retrying it', async () => {
    const run = await create({ a: { cancel: 'fail' }, b: { verdict: { approved: false, reason: 'closed' } } });
    expect(run.outcome).toMatchObject({ status: 'rejected', appId: 'b', reason: 'closed' });
    expect(run.calls.slice(0, 4)).toEqual(['createUser', 'try a', 'try b', 'cancel a']);
    const history = await env.client.workflow.getHandle(run.workflowId).fetchHistory();
    const children = history.events!.map((e) => e.startChildWorkflowExecutionInitiatedEventAttributes).filter(Boolean);
    expect(children.map((c) => [c!.workflowType!.name, c!.workflowId])).toEqual([
      ['cancelInBackground', expect.stringMatching(/^cancel:a:/)],
    ]);
  });

  test('an approval assigns the organization only when the user has none; later apps see it; attributes merge', async () => {
    const run = await create({
      a: { verdict: { approved: true, organizationId: 'org-a', customAttributes: { tier: 'gold', crm: '1' } } },
      b: { verdict: { approved: true, organizationId: 'org-b', customAttributes: { tier: 'platinum' } } },
    });
    expect(run.outcome).toMatchObject({ status: 'provisioned' });
    expect(run.triedWith.b.organizationId).toBe('org-a');
    expect(run.assigned()).toEqual({ organizationId: 'org-a', customAttributes: { tier: 'platinum', crm: '1' } });
  });

  test('a user deleted while its attempt ran: the apps that confirmed are told in the background, the answer is a rejection', async () => {
    const run = await create({ a: {}, b: {} }, { userGone: true });
    expect(run.outcome).toMatchObject({
      status: 'rejected',
      appId: 'a',
      reason: 'the user was deleted while it was being provisioned',
    });
    const history = await env.client.workflow.getHandle(run.workflowId).fetchHistory();
    const children = history.events!.map((e) => e.startChildWorkflowExecutionInitiatedEventAttributes).filter(Boolean);
    expect(children.map((c) => c!.workflowType!.name)).toEqual(['deprovisionApps']);
  });
});

describe('faults of a step', () => {
  test("a Try step that fails as a whole (its backstop on a stuck worker) is that app's refusal; the approvals before it are cancelled", async () => {
    const run = await attempt({ a: {}, b: { verdict: 'stalls' }, c: {} });
    expect(run.outcome).toMatchObject({ status: 'rejected', appId: 'b', userDeleted: true });
    expect(run.outcome).toMatchObject({ reason: expect.stringContaining('Try to app b the worker stalled') });
    expect(run.calls).toEqual(['createUser', 'try a', 'try b', 'cancel a', 'deleteUser']);
  });

  test('records the store could not write are written when their step is retried, and the apps are not called again', async () => {
    const run = await attempt({ a: {}, b: {} }, { recordFailures: 2 });
    expect(run.outcome).toMatchObject({
      status: 'provisioned',
      confirmedApps: ['a', 'b'],
      provisionedApps: ['a', 'b'],
    });
    expect(run.calls).toEqual([
      'createUser',
      ...each('try', 'ab'),
      ...each('confirm', 'ab'),
      'record fails',
      'record fails',
      'record',
    ]);
  });
});

describe('a password stashed by the API', () => {
  // A worker lost after an attempt's last step replays every step of that workflow task, the first step included,
  // and the first step needs the stashed hash unless it finds the user holding it.
  test('the attempt removes it as its last step when the user is kept', async () => {
    const run = await attempt({ a: {} }, {}, 'stash-1');
    expect(run.outcome.status).toBe('provisioned');
    expect(run.calls.at(-1)).toBe('discardCredential');
  });

  test('a refused attempt deletes the user and leaves the hash for the API to remove with the answer', async () => {
    const run = await attempt({ a: {}, b: { verdict: { approved: false, reason: 'no seats' } } }, {}, 'stash-2');
    expect(run.outcome).toMatchObject({ status: 'rejected', userDeleted: true });
    expect(run.calls).not.toContain('discardCredential');
    expect(run.calls.at(-1)).toBe('deleteUser');
  });
});

/** The steps an attempt ran, in order: each local activity's type (one marker each in the history). */
async function steps(workflowId: string): Promise<string[]> {
  const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
  const markers = history.events!.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity');
  return markers.map((e) => {
    const data = e.markerRecordedEventAttributes!.details!.data.payloads![0].data!;
    return (JSON.parse(Buffer.from(data).toString()) as { activity_type: string }).activity_type;
  });
}

// Restructure issue, item 2: the calls ran folded into the first step (one event for every app and phase), so a history
// did not show which app was asked, approved, refused or cancelled, and when.
describe('what a history shows', () => {
  test("each app's Try and Confirm is a step of its own, in the state table's order, between the user and the records", async () => {
    const run = await attempt({ a: {}, b: {}, c: {} });
    expect(run.outcome).toMatchObject({ status: 'provisioned' });
    expect(await steps(run.workflowId)).toEqual([
      'createUserWithApps',
      ...Array<string>(3).fill('tryApp'),
      ...Array<string>(3).fill('confirmApp'),
      'recordAndFinish',
    ]);
  });

  test('a refusal shows the Try of each app asked and the Cancel of each app that approved', async () => {
    const run = await attempt({ a: {}, b: {}, c: { verdict: { approved: false, reason: 'full' } } });
    expect(run.outcome).toMatchObject({ status: 'rejected', appId: 'c' });
    expect(await steps(run.workflowId)).toEqual([
      'createUserWithApps',
      ...Array<string>(3).fill('tryApp'),
      ...Array<string>(2).fill('cancelApp'),
      'deleteUser',
    ]);
  });
});
