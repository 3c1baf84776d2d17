import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { heapLimitNotice, oldSpaceFlagMb, WORKER_HEAP_LIMIT_MB, WORKER_MALLOC_ARENAS } from '../../workers/heap-limit';

const ROOT = join(__dirname, '..', '..');
const flag = `--max-old-space-size=${WORKER_HEAP_LIMIT_MB}`;

test('every way of starting a migration worker gives it the heap limit and the malloc arenas', () => {
  const { scripts } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  };
  const arenas = `MALLOC_ARENA_MAX=${WORKER_MALLOC_ARENAS} node `;
  for (const script of ['start', 'worker', 'migrate', 'bench:migration']) {
    expect(scripts[script]).toContain(flag);
    expect(scripts[script]).toContain(arenas);
  }
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  expect(dockerfile).toContain(`ENV NODE_OPTIONS=${flag}`);
  expect(dockerfile).toContain(`ENV MALLOC_ARENA_MAX=${WORKER_MALLOC_ARENAS}`);
});

test('the start-up line states the limit, and warns with the setting to use when the limit is V8 own', () => {
  // What V8 reports under the flag (the young generation added) and without it on a 24 GB machine.
  expect(heapLimitNotice(496, 448)).toEqual({
    level: 'info',
    message: "worker: V8 heap limit 448 MB (--max-old-space-size), 496 MB with V8's young generation",
  });
  expect(heapLimitNotice(496, undefined)).toEqual({ level: 'info', message: 'worker: V8 heap limit 496 MB' });
  const unset = heapLimitNotice(4144);
  expect(unset.level).toBe('warn');
  expect(unset.message).toContain('4144 MB');
  expect(unset.message).toContain(flag);
});

test("the flag is read from node's arguments or NODE_OPTIONS, the last one winning", () => {
  expect(oldSpaceFlagMb(['--max-old-space-size=448'], '')).toBe(448);
  expect(oldSpaceFlagMb([], '--enable-source-maps --max-old-space-size=512')).toBe(512);
  expect(oldSpaceFlagMb(['--import', 'tsx'], '')).toBeUndefined();
});
