import { spawnService } from '../support/service-process';

// The JSON log is written asynchronously; no line logged before the process ends is lost, whether it ends by a
// clean stop (flushLogs, then exit) or at once (process.exit, as after a fatal error).
test.each([
  ['stop', 0],
  ['exit', 3],
])(
  '%s: every one of 20,000 lines reaches standard output, in order',
  async (how, code) => {
    const burst = spawnService('test/fixtures/logging/burst-then-exit.ts', { LOG_FORMAT: 'json' }, [], [how, '20000']);
    expect(await burst.exited).toBe(code);
    const lines = burst
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => (JSON.parse(line) as { n: number }).n);
    expect(lines).toEqual(Array.from({ length: 20_000 }, (_, n) => n));
  },
  60_000,
);

// A clean stop waits for the write under way: with standard output's reader slow (here: paused for a moment, as a
// loaded machine's is), a stop that went on to exit while a chunk was still being written lost that chunk, or wrote
// it after the lines that followed it.
test('stop while a write waits for a slow reader: every line arrives, in order', async () => {
  const burst = spawnService(
    'test/fixtures/logging/burst-then-exit.ts',
    { LOG_FORMAT: 'json' },
    [],
    ['stop-later', '20000'],
  );
  burst.child.stdout!.pause();
  setTimeout(() => burst.child.stdout!.resume(), 700);
  expect(await burst.exited).toBe(0);
  const lines = burst
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => (JSON.parse(line) as { n: number }).n);
  expect(lines).toEqual(Array.from({ length: 20_000 }, (_, n) => n));
}, 60_000);
