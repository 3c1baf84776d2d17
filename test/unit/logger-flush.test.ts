import { spawnService, type ServiceProcess } from '../support/service-process';

// The JSON log is written asynchronously; no line logged before the process ends is lost, whether it ends by a
// clean stop (flushLogs, then exit) or at once (process.exit, as after a fatal error).

const burst = (how: string) =>
  spawnService('test/fixtures/logging/burst-then-exit.ts', { LOG_FORMAT: 'json' }, [], [how, '20000']);

/** The `n` of every JSON line the process wrote, in the order they arrived. */
const numbersOf = (writer: ServiceProcess) =>
  writer
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => (JSON.parse(line) as { n: number }).n);

const EVERY_LINE = Array.from({ length: 20_000 }, (_, n) => n);

test.each([
  ['stop', 0],
  ['exit', 3],
])(
  '%s: every one of 20,000 lines reaches standard output, in order',
  async (how, code) => {
    const writer = burst(how);
    expect(await writer.exited).toBe(code);
    expect(numbersOf(writer)).toEqual(EVERY_LINE);
  },
  60_000,
);

// A clean stop waits for the write under way: with standard output's reader slow (here: paused for a moment, as a
// loaded machine's is), a stop that went on to exit while a chunk was still being written lost that chunk, or wrote
// it after the lines that followed it.
test('stop while a write waits for a slow reader: every line arrives, in order', async () => {
  const writer = burst('stop-later');
  writer.child.stdout!.pause();
  setTimeout(() => writer.child.stdout!.resume(), 700);
  expect(await writer.exited).toBe(0);
  expect(numbersOf(writer)).toEqual(EVERY_LINE);
}, 60_000);
