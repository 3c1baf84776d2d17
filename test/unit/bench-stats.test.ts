import { childrenNamed, cpuSpent, loadSamples, readCpu, summarize, type CpuReading } from '../../bench/stats';

test('a benchmark counts failed tasks and keeps why they failed, each reason once and a few at most', async () => {
  const run = await loadSamples(20, 4, (i) =>
    Promise.resolve(i % 2 === 0 ? true : i === 1 ? false : `reason ${i % 7}`),
  );
  const result = summarize([run, await loadSamples(3, 1, () => Promise.resolve('reason 1'))]);
  expect(result.count).toBe(23);
  expect(result.failures).toBe(13);
  expect(result.failureReasons).toHaveLength(5);
  expect(new Set(result.failureReasons).size).toBe(5);
  expect(summarize([await loadSamples(5, 2, () => Promise.resolve(true))]).failureReasons).toBeUndefined();
});

test("a benchmark's CPU time counts only the processes it names: a server started in between from zero, none below zero", () => {
  const reading = (self: number, seconds: Record<number, number>): CpuReading => ({
    self,
    processes: new Map(
      Object.entries(seconds).map(([pid, s]) => [Number(pid), { name: 'postgres', parent: 1, seconds: s }]),
    ),
  });
  // 10 and 11 are this run's backends (11 started during the run); 12 is another run's, 13 ended meanwhile.
  const before = reading(1, { 10: 5, 12: 100, 13: 7 });
  const after = reading(1.5, { 10: 6, 11: 0.25, 12: 200 });
  expect(cpuSpent(before, after, { postgres: [10, 11, 13] })).toEqual({ 'this process': 0.5, postgres: 1.25 });
  expect(childrenNamed(readCpu(), 'no-such-process')).toEqual([]);
});
