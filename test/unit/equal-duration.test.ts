import { setTimeout as sleep } from 'node:timers/promises';
import { equalDuration } from '../../platform/security/equal-duration';

// The sign-in floor (issue 37, item 7): a slow step some calls take aside (the read-through window's source look-up)
// must not become the floor every other call is padded to, while the check's own cases still even out.
const timed = async (run: () => Promise<unknown>) => {
  const started = performance.now();
  await run();
  return performance.now() - started;
};

test('time spent aside neither raises the floor nor is padded', async () => {
  const atFloor = equalDuration({ halfLifeMs: 60_000, ceilingMs: 2_000 });
  const slowAside = await timed(() => atFloor((aside) => aside(() => sleep(400))));
  expect(slowAside).toBeGreaterThanOrEqual(390);
  expect(slowAside).toBeLessThan(700);
  // Had the 400 ms become the floor, this call would wait for it.
  expect(await timed(() => atFloor(() => Promise.resolve()))).toBeLessThan(250);
});

test("the check's own time still sets the floor the others are padded to", async () => {
  const atFloor = equalDuration({ halfLifeMs: 60_000, ceilingMs: 2_000 });
  await atFloor(() => sleep(300));
  expect(await timed(() => atFloor(() => Promise.resolve()))).toBeGreaterThanOrEqual(280);
});

test('a result the answer discloses is not padded, and still sets the floor the others wait for', async () => {
  const atFloor = equalDuration({ halfLifeMs: 60_000, ceilingMs: 2_000 });
  const disclosed = (result: string) => result === 'right';
  await atFloor(() => sleep(300).then(() => 'wrong'), disclosed);
  expect(await timed(() => atFloor(() => Promise.resolve('right'), disclosed))).toBeLessThan(250);
  await atFloor(() => sleep(400).then(() => 'right'), disclosed);
  expect(await timed(() => atFloor(() => Promise.resolve('wrong'), disclosed))).toBeGreaterThanOrEqual(380);
});
