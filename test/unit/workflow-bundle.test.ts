import { bundleWorkflowCode } from '@temporalio/worker';
import { WORKFLOW_CODE } from '../../workers/create-worker';
import * as workflows from '../../workers/workflows';
import { NOTIFY_SIGN_OUT } from '../../platform/temporal/sign-out-workflow';

const quiet = { info() {}, warn() {}, error() {}, debug() {}, trace() {}, log() {} };

/**
 * The workflow bundle holds the workflows, the workflow-safe code they import and the SDK, nothing else: a value
 * imported from a module of activities pulls its imports in too (once, kysely came in through a helper beside the
 * migration's types: a bundle 60 % larger, and the API-and-worker process spent 15 % more CPU per creation).
 */
test('the workflow bundle holds only workflow-safe modules of the project and the SDK', async () => {
  const { code } = await bundleWorkflowCode({ ...WORKFLOW_CODE, logger: quiet });
  const packages = new Set([...code.matchAll(/node_modules\/((?:@[^/]+\/)?[^/]+)\//g)].map((m) => m[1]));
  expect([...packages].sort()).toEqual(['@temporalio/common', '@temporalio/workflow', 'long', 'ms', 'nexus-rpc']);
  const own = [
    ...new Set(
      [...code.matchAll(/"\.\/((?:platform|provisioning|migration|sign-in|scim|api|workers)\/[^"]+\.ts)"/g)].map(
        (m) => m[1],
      ),
    ),
  ];
  const workflowSafe = [
    /^provisioning\/tcc\.ts$/,
    /^provisioning\/workflows\//,
    /^migration\/workflows\//,
    /^sign-in\/workflows\//,
    /^migration\/activities\/(plan|types)\.ts$/,
    /^migration\/store\/migration-counts\.ts$/,
    /^platform\/temporal\/(failure-converter|search-attributes|sign-out-workflow)\.ts$/,
    /^workers\/workflows\.ts$/,
  ];
  expect(own.filter((file) => !workflowSafe.some((pattern) => pattern.test(file)))).toEqual([]);
  expect(own).toContain('provisioning/workflows/transaction.ts');
});

/** Provisioning's removals start sign-in's back-channel logout by type name: the worker must register that name. */
test('the worker registers the sign-out workflow under the name provisioning starts it by', () => {
  expect(typeof (workflows as Record<string, unknown>)[NOTIFY_SIGN_OUT]).toBe('function');
  expect(NOTIFY_SIGN_OUT).toBe(workflows.notifySignOut.name);
});
