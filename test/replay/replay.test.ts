import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { temporalDataConverter } from '../../composition/temporal-data-converter';
import { parseConfig } from '../../config/load';
import { TEST_PAYLOAD_KEYS } from '../support/harness';

/**
 * Runs in flight when a new build rolls out replay the new workflow code against what the old one recorded.
 * Each folder under fixtures/histories holds histories recorded by `npx tsx scripts/record-histories.ts <label>`
 * with the workflow code of its day; every one must still replay without a nondeterminism error.
 */
const root = join(__dirname, '..', 'fixtures', 'histories');
const histories = readdirSync(root).flatMap((label) =>
  readdirSync(join(root, label)).map((file) => ({ name: `${label}/${file}`, path: join(root, label, file) })),
);

test('recorded histories are there to replay', () => {
  expect(histories.length).toBeGreaterThanOrEqual(7);
});

/** `{ workflowId, history }`; the first recordings hold the history alone (their workflows derive no ids from it). */
function load(path: string): { workflowId?: string; history: object } {
  const recorded = JSON.parse(readFileSync(path, 'utf8')) as {
    workflowId?: string;
    history?: object;
    events?: unknown;
  };
  return recorded.history ? { workflowId: recorded.workflowId, history: recorded.history } : { history: recorded };
}

/** Histories recorded since payloads are sealed open with the test services' payload keys; older ones pass through. */
const dataConverter = temporalDataConverter(parseConfig({ Temporal: { PayloadKeys: TEST_PAYLOAD_KEYS } }));

test.each(histories)('$name replays on the current workflow code', async ({ name, path }) => {
  const { workflowId, history } = load(path);
  await Worker.runReplayHistory(
    { workflowBundle: { codePath: process.env.TEST_WORKFLOW_BUNDLE! }, dataConverter, replayName: name },
    temporal.api.history.v1.History.fromObject(history),
    workflowId,
  );
});
