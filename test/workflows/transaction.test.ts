import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import type { ProvisioningActivities } from '../../activities/provisioning';
import type { TryVerdict } from '../../activities/provisioning/tcc-client';
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

function stubs(apps: Record<string, AppBehaviour>) {
  const calls: string[] = [];
  const records = new Set<string>();
  const triedWith: Record<string, UserProfile> = {};
  let assigned: unknown;
  let user: UserProfile | undefined;
  const activities: Partial<ProvisioningActivities> = {
    createUser: (input) => {
      calls.push('createUser');
      user = { ...input.user, active: true };
      return Promise.resolve({ status: 'created' as const, user });
    },
    resolveApps: () =>
      Promise.resolve({
        apps: Object.keys(apps).map((appId) => ({ appId, tryTimeoutSeconds: 60 })),
        unknownAppIds: [],
      }),
    tryApp: (input) => {
      calls.push(`try ${input.appId}`);
      triedWith[input.appId] = input.user;
      return Promise.resolve(apps[input.appId].verdict ?? { approved: true });
    },
    confirmApp: (input) => {
      calls.push(`confirm ${input.appId}`);
      if (apps[input.appId].confirm === 'fail') throw ApplicationFailure.nonRetryable('answered HTTP 500');
      return Promise.resolve();
    },
    recordProvision: (input) => {
      records.add(input.appId);
      return Promise.resolve(true);
    },
    cancelApp: (input) => {
      calls.push(`cancel ${input.appId}`);
      if (apps[input.appId].cancel === 'fail') throw ApplicationFailure.retryable('answered HTTP 503');
      return Promise.resolve();
    },
    finishProvisioning: (input) => {
      assigned = input.assigned;
      return Promise.resolve({ user: input.user, provisionedApps: [...records].sort() });
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

async function create(apps: Record<string, AppBehaviour>) {
  const stub = stubs(apps);
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

describe('the provisioning state table, row by row', () => {
  test('Start → Trying → Confirming → Provisioned: every app approves and confirms, one record per app', async () => {
    const run = await create({ a: {}, b: {}, c: {} });
    expect(run.outcome).toMatchObject({ status: 'provisioned', confirmedApps: ['a', 'b', 'c'] });
    expect(run.calls).toEqual(['createUser', 'try a', 'try b', 'try c', 'confirm a', 'confirm b', 'confirm c']);
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
      'try a',
      'try b',
      'try c',
      'confirm a',
      'confirm b',
      'cancel b',
      'cancel c',
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
});
