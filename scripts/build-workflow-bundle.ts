import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import { PREBUILT_BUNDLE_PATH, WORKFLOW_CODE } from '../workers/create-worker';

/** Production workers load this prebuilt bundle instead of bundling the workflow code at every start. */
bundleWorkflowCode(WORKFLOW_CODE).then(
  ({ code }) => {
    mkdirSync(dirname(PREBUILT_BUNDLE_PATH), { recursive: true });
    writeFileSync(PREBUILT_BUNDLE_PATH, code);
    console.log(`workflow bundle written to ${PREBUILT_BUNDLE_PATH}`);
  },
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
