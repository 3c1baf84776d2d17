import { loadSamples, summarize } from '../../bench/stats';

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
