import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { temporalDataConverter } from '../../platform/temporal/data-converter';
import { parseConfig } from '../../platform/config/load';
import { TEST_PAYLOAD_KEYS } from '../support/harness';

/**
 * Runs in flight when a new build rolls out replay the new workflow code against what the old one recorded. Until the
 * first release, workers drain before an upgrade (docs/design.md), so the histories are one baseline of the current
 * workflow code (`npx tsx scripts/record-histories.ts baseline`): a change that fails it either records the baseline
 * again, for a build whose workers drain, or guards the change with a patch once runs must survive an upgrade.
 */
const root = join(__dirname, '..', 'fixtures', 'histories');
const histories = readdirSync(root).flatMap((label) =>
  readdirSync(join(root, label)).map((file) => ({ name: `${label}/${file}`, path: join(root, label, file) })),
);

test('recorded histories are there to replay', () => {
  expect(histories.length).toBeGreaterThanOrEqual(7);
});

/** `{ workflowId, history }`: the workflow id goes with the history, since workflow code derives child ids from it. */
function load(path: string): { workflowId: string; history: object } {
  return JSON.parse(readFileSync(path, 'utf8')) as { workflowId: string; history: object };
}

/** The histories' payloads are sealed, as every test service's; they open with the test payload keys. */
const dataConverter = temporalDataConverter(parseConfig({ Temporal: { PayloadKeys: TEST_PAYLOAD_KEYS } }));

test.each(histories)('$name replays on the current workflow code', async ({ name, path }) => {
  const { workflowId, history } = load(path);
  await Worker.runReplayHistory(
    { workflowBundle: { codePath: process.env.TEST_WORKFLOW_BUNDLE! }, dataConverter, replayName: name },
    temporal.api.history.v1.History.fromObject(history),
    workflowId,
  );
});
