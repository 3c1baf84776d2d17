import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import type { ProvisioningActivities } from '../../activities/provisioning';
import type { TryVerdict } from '../../activities/provisioning/tcc-client';
import { tryThenConfirmInTurn } from '../../activities/provisioning/rounds';
import { findTemporalTestServer } from '../../dev/temporal-cli';
import type { UserProfile } from '../../store/users';
import { createUserAndProvision } from '../../workflows/provisioning';
import { newUserFrom } from '../../api/user-creation';

/**
 * The spec's provisioning state table, one case a row, against the workflow code with stub activities on the
 * time-skipping test server: no HTTP, no store, no waiting. The real-HTTP timeouts are tested in the integration tests.
 */
type AppBehaviour = { verdict?: TryVerdict; confirm?: 'ok' | 'fail'; cancel?: 'ok' | 'fail' };

let env: TestWorkflowEnvironment;
beforeAll(async () => {
  env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: findTemporalTestServer() } },
  });
}, 120_000);
afterAll(async () => {
  await env?.teardown();
});

/** Faults of a whole step rather than of one app: the user deleted meanwhile, the TCC step's own limit hit. */
type StepFaults = { userGone?: boolean; tccStepFails?: boolean };

function stubs(apps: Record<string, AppBehaviour>, faults: StepFaults) {
  const calls: string[] = [];
  const records = new Set<string>();
  const triedWith: Record<string, UserProfile> = {};
  let assigned: unknown;
  let user: UserProfile | undefined;
  const appRefs = Object.keys(apps).map((appId) => ({ appId, tryTimeoutSeconds: 60 }));
  // The per-app calls the phase steps make, each one recorded; the steps walk them as the real activities do.
  const tryOne = (appId: string, triedUser: UserProfile): Promise<TryVerdict> => {
    calls.push(`try ${appId}`);
    triedWith[appId] = triedUser;
    return Promise.resolve(apps[appId].verdict ?? { approved: true });
  };
  const confirmOne = (appId: string) => {
    calls.push(`confirm ${appId}`);
    if (apps[appId].confirm === 'fail') return Promise.reject(new Error('answered HTTP 500'));
    return Promise.resolve();
  };
  const activities: Partial<ProvisioningActivities> = {
    createUserForApps: (input) => {
      calls.push('createUser');
      user = { ...input.user, active: true };
      return Promise.resolve({
        status: 'created' as const,
        user,
        apps: appRefs,
        unknownAppIds: [],
        provisionedApps: [],
      });
    },
    tryThenConfirmApps: (input) =>
      faults.tccStepFails
        ? Promise.reject(ApplicationFailure.nonRetryable('the worker stalled'))
        : tryThenConfirmInTurn(input.apps, input.user, tryOne, confirmOne),
    recordAndFinish: (input) => {
      calls.push('recordAndFinish');
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
      return Promise.resolve({ deleted: true, appIds: [] });
    },
    discardCredential: () => Promise.resolve(),
  };
  return { activities, calls, records, triedWith, assigned: () => assigned, userExists: () => user !== undefined };
}

async function create(apps: Record<string, AppBehaviour>, faults: StepFaults = {}) {
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
        },
      ],
    }),
  );
  return { outcome, workflowId: `provisioning:${userId}`, ...stub };
}

/** The calls of one kind to the apps named by the letters, in that order: `each('try', 'ab')`. */
const each = (call: string, appIds: string) => [...appIds].map((appId) => `${call} ${appId}`);

describe('the provisioning state table, row by row', () => {
  test('Start → Trying → Confirming → Provisioned: every app approves and confirms, one record per app', async () => {
    const run = await create({ a: {}, b: {}, c: {} });
    expect(run.outcome).toMatchObject({ status: 'provisioned', confirmedApps: ['a', 'b', 'c'] });
    expect(run.calls).toEqual(['createUser', ...each('try', 'abc'), ...each('confirm', 'abc'), 'recordAndFinish']);
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
      'recordAndFinish',
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

  test('a TCC step that fails as a whole (its backstop on a stalled worker) cancels every app, since any may have approved', async () => {
    const run = await create({ a: {}, b: {} }, { tccStepFails: true });
    expect(run.outcome).toMatchObject({ status: 'rejected', appId: 'a', userDeleted: true });
    expect(run.outcome).toMatchObject({ reason: expect.stringContaining('the worker stalled') });
    expect(run.calls).toEqual(['createUser', 'cancel a', 'cancel b', 'deleteUser']);
  });
});

describe('the cost of an attempt', () => {
  test('a creation is three workflow steps whatever the number of apps: the user, the TCC calls, the records', async () => {
    const oneApp: Record<string, AppBehaviour> = { a: {} };
    for (const apps of [oneApp, { a: {}, b: {}, c: {}, d: {}, e: {} }]) {
      const run = await create(apps);
      expect(run.outcome).toMatchObject({ status: 'provisioned' });
      const history = await env.client.workflow.getHandle(run.workflowId).fetchHistory();
      const markers = history.events!.map((e) => e.markerRecordedEventAttributes?.markerName).filter(Boolean);
      expect(markers.filter((name) => name === 'core_local_activity')).toHaveLength(3);
      expect(history.events!.filter((e) => e.workflowTaskCompletedEventAttributes)).toHaveLength(1);
    }
  });
});
