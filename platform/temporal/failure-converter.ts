import { DefaultFailureConverter } from '@temporalio/common';

/**
 * Failure messages and stack traces travel as an encoded payload (sealed by the payload codec) instead of plain history
 * fields: an app's reason for a refusal can name the user. Loaded by clients and, bundled, by the workflow sandbox.
 */
export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
